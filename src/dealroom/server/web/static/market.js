// The room page of a market room: the seller, one column per buyer's thread side by side (its
// offers chart, its events in order on the market's clock), the highest bid and the seller's
// turn budget; after the end the outcome, every private value and the market's scoring. Drawn
// from the server's MarketSpectatorView (server/web/market_views.py); text only ever goes in
// with textContent (DR.el). A market seller's seat page (seat-market.js) draws its threads in
// the same columns (DR.market.column, DR.market.update), each with its controls added.
"use strict";

// The room page holds two <main>s, a negotiation's and a market's (the seat page: a seat's and a
// market seller's): the first view keeps the one it needs and removes the other (a page has one
// main landmark).
DR.keepMain = (id) => {
  for (const main of document.querySelectorAll("main")) {
    if (main.id === id) main.classList.remove("hidden");
    else main.remove();
  }
};

DR.market = (() => {
  const { el, fill, text, money, seconds } = DR;
  const NS = "http://www.w3.org/2000/svg";
  const share = (x) => (x === null ? "–" : (100 * x).toFixed(1) + "%");
  const shown = (x) => (x === null ? "–" : String(x));

  // A thread's state in a few words; `ids`: with the live offers' ids (the room page's).
  function state(thread, cur, ids) {
    if (!thread.open) {
      const last = thread.events[thread.events.length - 1];
      return "ended" + (last && last.type === "negotiation_ended" ? " (" + last.reason + ")" : "");
    }
    const live = thread.live_offers.map((o) => o.by + " " + money(o.price, cur) + (ids ? " (" + o.offer_id + ")" : ""));
    return "open" + (live.length ? "; live: " + live.join(", ") : "");
  }

  // One thread's column, made once: `update` draws a view of the thread into it in place (the
  // seat page keeps its columns, and the controls it adds to them, across views; the room page
  // makes them anew for each view). Its chart is drawn once it is in the page (it sizes itself).
  function column(buyer, title) {
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("class", "chart");
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", buyer + "'s offers over time");
    const parts = {
      state: el("p", { class: "muted state" }),
      svg,
      log: el("ol", { class: "log" }),
      none: el("p", { class: "muted", text: "no events yet" }),
    };
    parts.node = el("article", { class: "thread", "data-buyer": buyer },
      el("h3", { text: title }), parts.state, svg, parts.log, parts.none);
    return parts;
  }

  // `how`: the view's deadline and clock (`scenario`, `now`), the chart's reference `lines`, the
  // log's `items` (each a line's nodes), whether the thread holds the highest bid (`best`), its
  // buyer `won`, and `ids` (show offer ids).
  function update(col, thread, cur, how) {
    const notes = [state(thread, cur, how.ids)];
    if (how.best) notes.push("the highest bid");
    if (how.won) notes.push("bought the item");
    col.node.classList.toggle("best", how.best);
    col.node.classList.toggle("won", how.won);
    col.node.dataset.open = String(thread.open);
    const note = notes.join("; ");
    if (col.state.textContent !== note) col.state.textContent = note;
    const items = how.items;
    if (items.length < col.log.childElementCount) col.log.replaceChildren();
    for (const item of items.slice(col.log.childElementCount)) col.log.append(el("li", {}, item));
    col.log.classList.toggle("hidden", !items.length);
    col.none.classList.toggle("hidden", items.length > 0);
    return () => DR.chart(col.svg, {
      events: thread.events, deadline: how.scenario.deadline, now: how.now, lines: how.lines, currency: cur,
    });
  }

  // The room page's column: every event, with ids; after the end, the buyer's value and the cost.
  function spectatorColumn(view, thread, cur) {
    const r = view.result;
    const col = column(thread.buyer, thread.buyer + " · " + thread.seat);
    const lines = [{ label: "list price", value: Number(view.scenario.list_price), cls: "list" }];
    if (r) {
      lines.push({ label: thread.buyer + "'s value", value: Number(r.buyer_values[thread.buyer]), cls: "value" });
      lines.push({ label: "seller cost", value: Number(r.seller_cost), cls: "cost" });
    }
    const draw = update(col, thread, cur, {
      scenario: view.scenario, now: view.now, lines, ids: true,
      best: view.best_bid !== null && view.best_bid.buyer === thread.buyer,
      won: r !== null && r.outcome.buyer === thread.buyer,
      items: thread.events.map((e) => [el("span", { class: "t", text: seconds(e.t) }), DR.describe(e, cur, null)]),
    });
    return { node: col.node, draw };
  }

  function facts(view, cur) {
    const bid = view.best_bid;
    const rows = [
      ["seller", view.seller],
      ["buyers", view.threads.map((t) => t.buyer + " (" + t.seat + ")").join(", ")],
      ["highest bid", bid ? bid.buyer + ": " + money(bid.price, cur) + " (" + bid.offer_id + ")" : "none"],
      ["seller's turns", view.seller_actions + " of " + view.seller_budget + " used"],
    ];
    fill("market-facts", rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
  }

  function row(label, value) {
    return el("tr", {}, el("th", { scope: "row", text: label }), el("td", { text: value }));
  }

  function outcome(view, cur) {
    const box = document.getElementById("market-outcome");
    const scores = document.getElementById("market-scores");
    const values = document.getElementById("market-values");
    const r = view.result;
    if (!r) {
      box.textContent = "The market is running; private values are shown once it ends.";
      box.className = "outcome muted";
      scores.classList.add("hidden");
      values.classList.add("hidden");
      return;
    }
    const o = r.outcome, m = r.measures;
    box.className = "outcome";
    box.textContent = o.status === "deal"
      ? "Sold to " + o.buyer + " at " + money(o.price, cur) + " after " + seconds(o.time) + " (" + o.end_reason + ")"
      : "No sale (" + o.end_reason + ") after " + seconds(o.time);
    const allocative = o.allocative === null ? "–" : o.allocative ? "yes" : "no";
    fill("market-scores",
      el("caption", { text: "Scoring" }),
      row("seller's surplus", money(o.seller_surplus, cur)),
      row("winning buyer's surplus", money(o.buyer_surplus, cur)),
      row("most gains (best value − cost)", money(o.gains, cur)),
      row("efficiency", share(o.efficiency)),
      row("to the highest value (allocative)", allocative),
      row("seller's share of the best price", share(o.seller_share)),
      row("seller's actions", o.seller_actions + " of " + view.seller_budget),
      row("buyers probed before the first concession", shown(m.probed)),
      row("offers per buyer", m.offers_per_buyer.toFixed(2)),
      row("fixation on the highest bid", share(m.fixation)),
      row("buyers unheard at the sale", shown(m.unheard_at_sale)),
      row("early-sale loss (share of the gains)", share(m.early_sale_loss)));
    const best = Math.max(...Object.values(r.buyer_values).map(Number));
    fill("market-values",
      el("caption", { text: "Private values" }),
      el("tr", {}, el("th", { scope: "col", text: "seat" }), el("th", { scope: "col", text: "private value" }), el("th", { scope: "col", text: "surplus" })),
      el("tr", {}, el("th", { scope: "row", text: "seller (cost)" }), el("td", { text: money(r.seller_cost, cur) }), el("td", { text: money(o.seller_surplus, cur) })),
      Object.entries(r.buyer_values).map(([buyer, value]) => el("tr", {},
        el("th", { scope: "row", text: buyer + (Number(value) === best ? " (highest value)" : "") }),
        el("td", { text: money(value, cur) }),
        el("td", { text: money(buyer === o.buyer ? o.buyer_surplus : 0, cur) }))));
    scores.classList.remove("hidden");
    values.classList.remove("hidden");
  }

  function render(view) {
    const s = view.scenario, cur = s.currency;
    DR.keepMain("market");
    text("item", s.item.name + " (market " + view.negotiation + ", " + view.threads.length + " buyers)");
    text("list-price", "list price " + money(s.list_price, cur));
    text("seats", "seller: " + view.seller + (view.open ? "" : " · over"));
    facts(view, cur);
    DR.clock(view, "market-clock");
    const columns = view.threads.map((thread) => spectatorColumn(view, thread, cur));
    fill("threads", columns.map((c) => c.node));
    columns.forEach((c) => c.draw());
    outcome(view, cur);
  }

  return { render, column, update };
})();
