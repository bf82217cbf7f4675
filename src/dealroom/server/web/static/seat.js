// The seat page: a person plays one seat through the same tools an MCP client calls. The page
// has five states: consent (the instructions and the consent line), waiting (a pair study's
// participant waits for a partner), playing, ended (this negotiation is over, Next may start
// another) and final (the series is over: results, payment, completion; no Next). Live views
// update the page in place, never rebuilding a control, so keyboard focus survives them.
"use strict";

(() => {
  const { el, money, clockTime } = DR;
  const { setText, show, refocus, announce, instructions, outcomeText } = DR.seat;
  const byId = (id) => document.getElementById(id);
  const HEADINGS = {
    consent: "lobby-heading", waiting: "lobby-heading", playing: "move-heading",
    ended: "outcome", final: "final-heading",
  };
  let view = null;
  let state = null;
  let seen = null; // this negotiation: its key, the other side's offers seen, its end seen

  function status(message, bad) {
    const node = setText("status", message);
    node.className = bad ? "bad" : "";
  }

  function stateOf(v) {
    if (v.kind === "lobby") return v.completion ? "final" : v.needs_consent ? "consent" : "waiting";
    if (v.needs_consent) return "consent";
    if (v.series_over) return "final";
    return v.observation.outcome ? "ended" : "playing";
  }

  function render(next) {
    if (next.kind === "market_seller") {
      DR.marketSeat.render(next);  // a market seller's page: seat-market.js
      return;
    }
    DR.keepMain("main");
    view = next;
    const was = state;
    state = stateOf(view);
    const lines = [];
    show("consent-page", state === "consent" || state === "waiting");
    show("seat-page", state === "playing" || state === "ended");
    show("final", state === "final");
    if (state === "consent" || state === "waiting") {
      lobby(view, lines, was);
    } else if (state === "final") {
      if (view.completion) {
        setText("item", "Thank you for taking part");
        setText("role", view.participant ? "participant " + view.participant : "");
        setText("value", "");
      } else {
        header(view);
      }
      const summary = DR.seat.final(view);
      DR.study.form(view, refresh);
      if (was !== "final") lines.push(...summary);
    } else {
      negotiation(view, lines, was);
    }
    if (was !== null && was !== state) refocus(HEADINGS[state]);
    if (was !== null) announce(...lines);
  }

  function lobby(v, lines, was) {
    setText("item", "Welcome");
    setText("role", v.participant ? "participant " + v.participant : "");
    setText("value", "");
    const blocks = instructions("lobby-instructions", v.instructions);
    show("lobby-instructions", blocks);
    const asking = v.needs_consent && Boolean(v.consent);
    show("consent-box", asking);
    setText("consent-text", v.consent || "");
    const briefing = v.kind === "seat" ? v.briefing : "";
    show("consent-briefing", Boolean(briefing));
    setText("consent-briefing", briefing);
    const message = v.kind === "lobby" ? v.message : "";
    if (byId("lobby-message").textContent !== message && was !== null) lines.push(message);
    setText("lobby-message", message);
    const waiting = v.kind === "lobby" && v.waiting;
    setText("lobby-waited", waiting && v.waited_s !== null ? "You have waited " + DR.seat.duration(v.waited_s) + "." : "");
    const quizzing = v.kind === "lobby" && (v.quiz || []).length > 0;
    DR.study.quiz(v, refresh);
    setText("lobby-heading", v.needs_consent ? "Before you start" : quizzing ? "Questions about the study"
      : waiting ? "Waiting for a partner" : "Thank you");
  }

  async function refresh() {
    try { render(await DR.api("/web/api/seat")); } catch (problem) { status(String(problem.message), true); }
  }

  function header(v) {
    const s = v.observation.scenario, cur = s.currency;
    const of = v.negotiations ? " of " + v.negotiations : "";
    const kind = v.practice ? "practice negotiation " : "negotiation ";
    setText("item", s.item.name + " (" + kind + v.negotiation + of + (v.practice ? ", unpaid" : "") + ")");
    setText("role", "you are the " + v.role + " · list price " + money(s.list_price, cur));
    setText("value", (v.role === "buyer" ? "your value (the most you would pay) "
      : "your cost (the least you would take) ") + money(v.observation.private_value, cur));
  }

  function negotiation(v, lines, was) {
    const o = v.observation, s = o.scenario, cur = s.currency;
    const key = v.room + "/" + v.negotiation;
    if (!seen || seen.key !== key) {
      if (was !== null) lines.push("Negotiation " + v.negotiation + " has started.");
      seen = { key, offers: new Set(), ended: false, first: true, events: 0, log: 0, messages: 0 };
      for (const id of ["offer-price", "offer-message", "message"]) byId(id).value = "";
      byId("events").replaceChildren();
      byId("messages").replaceChildren();
      byId("replies").replaceChildren();  // a new negotiation starts a new log
      byId("refusals").replaceChildren();
      setText("notice", "");
    }
    header(v);
    const mine = v.role === "buyer" ? "your value (most you pay)" : "your cost (least you take)";
    setText("legend-mine", v.role === "buyer" ? "your own value" : "your own cost");
    DR.chart(byId("chart"), {
      events: o.events, deadline: s.deadline, now: o.now, currency: cur,
      lines: [
        { label: "list price", value: Number(s.list_price), cls: "list" },
        { label: mine, value: Number(o.private_value), cls: v.role === "buyer" ? "value" : "cost" },
      ],
    });
    DR.clock(v, "clock", clockTime);
    // On a phone the chart (and its clock) is below the controls: the time left is here too.
    setText("time-left", clockTime(Math.max(s.deadline - o.now, 0)) + " left");
    setText("hint", v.hint);
    // A market's buyer: whose turn the market's clock waits for (market_seat_views).
    show("turn", Boolean(v.turn) && !o.outcome);
    setText("turn", v.turn ? v.turn.text : "");
    const over = Boolean(o.outcome);
    const theirs = o.live_offers.find((offer) => offer.by !== v.role);
    const offerShown = Boolean(theirs) && !over;
    const hadFocus = byId("their-offer").contains(document.activeElement);
    show("their-offer", offerShown);
    if (offerShown) {
      setText("live-offer", "Their live offer: " + money(theirs.price, cur));
      byId("live-offer").dataset.offer = theirs.offer_id;
      setText("accept", "Accept " + money(theirs.price, cur));
    } else if (hadFocus) {
      refocus("move-heading", true);
    }
    lines.push(...news(v, o, cur));
    // The server writes the log in a person's words (people_log.person_lines).
    append("events", v.log, seen.log, (line) => el("li", {}, line));
    seen.events = o.events.length;
    seen.log = v.log.length;
    const said = DR.messages(o.events);
    append("messages", said, seen.messages, (m) =>
      el("li", { class: m.by || "" }, el("span", { class: "t", text: clockTime(m.t) + " " + (m.by === v.role ? "you" : m.by) }), m.text));
    seen.messages = said.length;
    setText("briefing", v.briefing);
    setText("outcome", over ? (v.partner_left || outcomeText(o.outcome, cur, o.events, v.role)) +
      "; your surplus " + money(o.outcome.surplus, cur) : "");
    for (const node of document.querySelectorAll(".play")) node.classList.toggle("hidden", over);
    show("wait", v.clock === "virtual");
    show("next", over && v.can_start_next);
    show("instructions-box", instructions("play-instructions", v.instructions));
    setText("results", v.finished
      ? "Finished negotiations: " + v.finished + "; your total surplus " + money(v.total_surplus, cur) : "");
    seen.first = false;
  }

  // What the person should hear about now: the other side's new offers and rejections, the end.
  function news(v, o, cur) {
    const lines = [];
    const other = v.role === "buyer" ? "seller" : "buyer";
    for (const e of o.events.slice(seen.events)) {
      if (e.by !== other) continue;
      const said = e.message ? ', saying "' + e.message + '"' : "";
      if (e.type === "offer_made" && !seen.offers.has(e.offer_id)) {
        seen.offers.add(e.offer_id);
        if (!seen.first) lines.push("The " + other + " offers " + money(e.price, cur) + said + ".");
      } else if (e.type === "offer_rejected" && !seen.first) {
        lines.push("The " + other + " rejected your offer" + said + ".");
      }
    }
    if (o.outcome && !seen.ended) {
      seen.ended = true;
      if (!seen.first) {
        lines.push("The negotiation has ended: " + (v.partner_left || outcomeText(o.outcome, cur, o.events, v.role)) +
          "; your surplus " + money(o.outcome.surplus, cur) + ".");
      }
    }
    return lines;
  }

  // Lists only grow during a negotiation: add the new items, keep the old nodes.
  function append(id, items, count, make) {
    const list = byId(id);
    if (items.length < count) list.replaceChildren();
    for (const item of items.slice(list.childElementCount)) list.append(make(item));
  }

  function withMessage(args, id) {
    const message = byId(id).value.trim();
    if (message) args.message = message;
    return args;
  }

  function refused(text) {
    byId("refusals").prepend(el("li", { class: "refusal" }, text));
    setText("notice", text);
    announce("Refused: " + text);
  }

  const call = DR.seat.caller({
    buttons: "#seat-page button",
    notice: "notice",
    refused,
    refresh,
    replied: (tool, args, reply) => {
      byId("replies").prepend(el("li", {}, reply.text));
      if (tool === "make_offer" || tool === "reject") byId("offer-message").value = "";
      if (tool === "send_message") byId("message").value = "";
    },
  });

  function offerId() {
    return byId("live-offer").dataset.offer;
  }

  function bind() {
    byId("offer-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const price = Number(byId("offer-price").value);
      call("make_offer", withMessage({ price }, "offer-message"));
    });
    byId("message-form").addEventListener("submit", (event) => {
      event.preventDefault();
      call("send_message", { text: byId("message").value });
    });
    byId("accept").addEventListener("click", () => call("accept", { offer_id: offerId() }));
    byId("reject").addEventListener("click", () =>
      call("reject", withMessage({ offer_id: offerId() }, "offer-message")));
    byId("wait").addEventListener("click", () => call("wait_for_opponent", {}));
    byId("walk-away").addEventListener("click", () => {
      if (confirm("Walk away for good? The negotiation ends without a deal.")) call("walk_away", {});
    });
    byId("next").addEventListener("click", () => call("new_negotiation", {}));
    byId("agree").addEventListener("click", async () => {
      try {
        await DR.api("/web/api/seat/consent", {});
        render(await DR.api("/web/api/seat"));
      } catch (problem) {
        status(String(problem.message), true);
      }
    });
    // What the page does is the study's data (opens, tab hidden and shown again, closes).
    const page = (event) => DR.beacon("/web/api/seat/page", { event });
    page("open");
    document.addEventListener("visibilitychange", () =>
      page(document.visibilityState === "hidden" ? "hidden" : "visible"));
    window.addEventListener("pagehide", () => page("close"));
  }

  if (!DR.token()) {
    status("this link has no token: open your seat's link", true);
    return;
  }
  bind();
  DR.stream("/web/api/seat/events", render, status);
})();
