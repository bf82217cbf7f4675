// The seat page of a market's seller: every buyer's thread side by side in the room page's
// columns (DR.market.column, DR.market.update), each with the seller's controls for that buyer
// (an offer, accept or reject its live offer, a message, walk away from its thread); whose turn
// the market's clock waits for, the turn budget, the highest bid; once over, the outcome and the
// measures of the seller's own conduct. Drawn from the server's MarketSellerPageView
// (server/web/market_seat_views.py): every text a person reads (briefing, hint, turn, the
// threads' lines, replies, refusals) is the server's. Columns and their controls are made once
// and updated in place, so focus and typed text survive the live views.
"use strict";

DR.marketSeat = (() => {
  const { el, fill, money, clockTime } = DR;
  const { setText } = DR.seat;
  const byId = (id) => document.getElementById(id);
  const columns = new Map(); // buyer -> { col, parts: the controls' nodes }
  const heard = new Map(); // buyer -> lines of its thread already announced
  let first = true;
  let current = null;

  function show(node, visible) {
    if (node.classList.contains("hidden") !== !visible) node.classList.toggle("hidden", !visible);
  }

  function announce(text) {
    if (!text) return;
    const log = byId("m-announce");
    log.append(el("p", {}, text));
    while (log.childElementCount > 6) log.firstElementChild.remove();
  }

  const hidden = (text) => el("span", { class: "sr-only" }, text);

  // One buyer's controls, made once (ids carry the buyer: each label names its own field).
  function controls(buyer) {
    const id = (name) => "m-" + name + "-" + buyer;
    const parts = {};
    parts.live = el("p", { class: "outcome", id: id("live") });
    parts.accept = el("button", { class: "primary", type: "button", id: id("accept"),
      onclick: () => act("accept", { buyer, offer_id: parts.live.dataset.offer }) }, "Accept");
    parts.reject = el("button", { type: "button", id: id("reject"),
      onclick: () => act("reject", withMessage({ buyer, offer_id: parts.live.dataset.offer }, id("offer-message"))) },
    "Reject", hidden(" " + buyer + "'s offer"));
    parts.theirs = el("div", { class: "hidden" }, parts.live, parts.accept, parts.reject);
    parts.offer = el("form", { class: "play", novalidate: true, onsubmit: (event) => {
      event.preventDefault();
      act("make_offer", withMessage({ buyer, price: Number(byId(id("price")).value) }, id("offer-message")));
    } },
    el("label", { for: id("price") }, "Price"),
    el("input", { type: "number", id: id("price"), min: "0.01", step: "0.01", inputmode: "decimal" }),
    el("label", { for: id("offer-message") }, "Message with the offer (optional)"),
    el("input", { type: "text", id: id("offer-message"), maxlength: "2000", autocomplete: "off" }),
    el("button", { class: "primary", type: "submit", id: id("make-offer") }, "Make a binding offer", hidden(" to " + buyer)));
    parts.message = el("form", { class: "play", novalidate: true, onsubmit: (event) => {
      event.preventDefault();
      act("send_message", { buyer, text: byId(id("message")).value });
    } },
    el("label", { for: id("message") }, "Message"),
    el("input", { type: "text", id: id("message"), maxlength: "2000", autocomplete: "off" }),
    el("button", { type: "submit", id: id("send-message") }, "Send message", hidden(" to " + buyer)));
    parts.walk = el("div", { class: "play" }, el("button", { class: "danger", type: "button", id: id("walk-away"),
      onclick: () => {
        if (confirm("Leave " + buyer + "'s thread for good?")) act("walk_away", { buyer });
      } }, "Walk away", hidden(" from " + buyer)));
    parts.node = el("div", { class: "controls" }, parts.theirs, parts.offer, parts.message, parts.walk);
    return parts;
  }

  function withMessage(args, id) {
    const message = byId(id).value.trim();
    if (message) args.message = message;
    return args;
  }

  function column(buyer) {
    if (!columns.has(buyer)) {
      const col = DR.market.column(buyer, buyer);
      const parts = controls(buyer);
      col.node.append(parts.node);
      byId("m-threads").append(col.node);
      columns.set(buyer, { col, parts });
    }
    return columns.get(buyer);
  }

  function thread(view, t, cur) {
    const { col, parts } = column(t.buyer);
    const draw = DR.market.update(col, t, cur, {
      scenario: view.scenario, now: view.now, ids: false,
      lines: [
        { label: "list price", value: Number(view.scenario.list_price), cls: "list" },
        { label: "your cost", value: Number(view.private_value), cls: "cost" },
      ],
      best: view.best_bid !== null && view.best_bid.buyer === t.buyer,
      won: view.outcome !== null && view.outcome.buyer === t.buyer,
      items: t.log.map((line) => [line]),
    });
    const open = view.open && t.open;
    const theirs = t.live_offers.find((offer) => offer.by === "buyer");
    const hadFocus = parts.theirs.contains(document.activeElement);
    show(parts.theirs, open && Boolean(theirs));
    if (open && theirs) {
      const price = money(theirs.price, cur);
      if (parts.live.textContent !== t.buyer + "'s live offer: " + price) {
        parts.live.textContent = t.buyer + "'s live offer: " + price;
        parts.accept.replaceChildren("Accept " + price, hidden(" from " + t.buyer));
      }
      parts.live.dataset.offer = theirs.offer_id;
    } else if (hadFocus) {
      byId("m-heading").focus({ preventScroll: true });
    }
    for (const node of [parts.offer, parts.message, parts.walk]) show(node, open);
    // New lines of the buyer's moves are read out (not the first view's).
    const said = heard.get(t.buyer) || 0;
    if (!first) {
      for (const line of t.log.slice(said)) {
        if (!/^\d+:\d\d You /.test(line)) announce(t.buyer + ": " + line);
      }
    }
    heard.set(t.buyer, t.log.length);
    return draw;
  }

  function facts(view, cur) {
    const bid = view.best_bid;
    const rows = [
      ["your cost", money(view.private_value, cur)],
      ["your actions", view.seller_actions + " of " + view.seller_budget + " used, " + view.actions_left + " left"],
      ["highest bid", bid ? bid.buyer + ": " + money(bid.price, cur) : "none"],
    ];
    const key = JSON.stringify(rows);
    const node = byId("m-facts");
    if (node.dataset.key !== key) {
      node.dataset.key = key;
      fill("m-facts", rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
    }
  }

  function measures(view) {
    const m = view.measures;
    const table = byId("m-measures");
    show(table, Boolean(m));
    if (!m || table.dataset.done) return;
    table.dataset.done = "yes";
    const share = (x) => (x === null ? "–" : (100 * x).toFixed(1) + "%");
    const shown = (x) => (x === null ? "–" : String(x));
    const row = (label, value) => el("tr", {}, el("th", { scope: "row", text: label }), el("td", { text: value }));
    fill("m-measures",
      el("caption", { text: "How you sold" }),
      row("buyers probed before your first concession", shown(m.probed)),
      row("your offers per buyer", m.offers_per_buyer.toFixed(2)),
      row("your moves to the highest bidder while bids stood", share(m.fixation)),
      row("buyers who had made no offer at the sale", shown(m.unheard_at_sale)));
  }

  function render(view) {
    DR.keepMain("market-seat");
    const was = current;
    current = view;
    const s = view.scenario, cur = s.currency;
    if (was && was.negotiation !== view.negotiation) {  // the series' next market: a fresh start
      delete byId("m-measures").dataset.done;
      fill("m-replies");
    }
    const number = view.negotiation > 1 ? ", market " + view.negotiation : "";
    setText("item", s.item.name + " (market" + number + ", " + view.buyers.length + " buyers)");
    setText("role", "you are the seller · list price " + money(s.list_price, cur));
    setText("value", "your cost (the least you would take) " + money(view.private_value, cur));
    setText("m-turn", view.turn.text).classList.toggle("yours", view.turn.yours);
    setText("m-hint", view.hint);
    facts(view, cur);
    DR.clock(view, "m-clock", clockTime);
    const draws = view.threads.map((t) => thread(view, t, cur));
    draws.forEach((draw) => draw());
    show(byId("m-market-controls"), view.open);
    setText("m-outcome", view.outcome_text || "");
    if (view.outcome_text && was && !was.outcome_text) {
      announce("The market has ended: " + view.outcome_text);
      byId("m-outcome").focus({ preventScroll: true });
    }
    measures(view);
    setText("m-series", view.finished > 0 && (view.can_start_next || view.negotiation > 1)
      ? "Markets finished: " + view.finished + "; your total surplus " + money(view.total_surplus, cur) + "."
      : "");
    show(byId("m-next"), !view.open && view.can_start_next);
    setText("m-briefing", view.briefing);
    first = false;
  }

  function refused(text) {
    byId("m-replies").prepend(el("li", { class: "refusal" }, "Refused: " + text));
    setText("m-notice", text);
    announce("Refused: " + text);
  }

  async function refresh() {
    try { render(await DR.api("/web/api/seat")); } catch (problem) { setText("status", String(problem.message)); }
  }

  const act = DR.seat.caller({
    buttons: "#market-seat button",
    notice: "m-notice",
    refused,
    refresh,
    replied: (tool, args, reply) => {
      byId("m-replies").prepend(el("li", {}, (args.buyer ? args.buyer + ": " : "") + reply.text));
      const suffix = args.buyer ? "-" + args.buyer : "";
      if (tool === "make_offer" || tool === "reject") byId("m-offer-message" + suffix).value = "";
      if (tool === "send_message") byId("m-message" + suffix).value = "";
    },
  });

  function bind() {
    byId("m-wait").addEventListener("click", () => act("wait_for_opponent", {}));
    byId("m-next").addEventListener("click", () => act("new_negotiation", {}));
    byId("m-leave").addEventListener("click", () => {
      if (confirm("Leave the whole market? It ends without a sale.")) act("walk_away", {});
    });
  }

  document.addEventListener("DOMContentLoaded", bind);
  return { render };
})();
