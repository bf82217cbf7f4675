// The seat page: a person plays one seat through the same tools an MCP client calls.
"use strict";

(() => {
  const { el, fill, text, money, seconds } = DR;
  let view = null;
  let busy = false;
  let joined = false;

  function status(message, bad) {
    const node = document.getElementById("status");
    node.textContent = message;
    node.className = bad ? "bad" : "";
  }

  function show(id, visible) {
    document.getElementById(id).classList.toggle("hidden", !visible);
  }

  function render(next) {
    view = next;
    const o = view.observation, s = o.scenario, cur = s.currency;
    if (view.needs_consent) {
      show("seat-page", false);
      show("consent-page", true);
      text("consent-briefing", view.briefing);
      text("consent-text", view.consent);
      return;
    }
    show("consent-page", false);
    show("seat-page", true);
    if (!joined) {
      // The seat's first call starts its clock (on the wall clock, time runs from here on).
      joined = true;
      DR.api("/web/api/seat/call", { tool: "get_state", arguments: {} }).catch(() => { joined = false; });
    }
    text("item", s.item.name + " (negotiation " + view.negotiation + ")");
    text("role", "you are the " + view.role + " · list price " + money(s.list_price, cur));
    text("value", "your private value " + money(o.private_value, cur));
    const mine = view.role === "buyer" ? "your value (most you pay)" : "your cost (least you take)";
    DR.chart(document.getElementById("chart"), {
      events: o.events, deadline: s.deadline, now: o.now, currency: cur,
      lines: [
        { label: "list price", value: Number(s.list_price), cls: "list" },
        { label: mine, value: Number(o.private_value), cls: view.role === "buyer" ? "value" : "cost" },
      ],
    });
    DR.clock(view, "clock");
    text("hint", view.hint);
    const theirs = o.live_offers.find((offer) => offer.by !== view.role);
    const over = o.outcome !== null && o.outcome !== undefined;
    fill("their-offer", theirs && !over
      ? [el("div", { class: "outcome", id: "live-offer", "data-offer": theirs.offer_id },
          "Their live offer: " + money(theirs.price, cur) + " (" + theirs.offer_id + ")"),
        el("button", { class: "primary", id: "accept", onclick: () => call("accept", { offer_id: theirs.offer_id }) }, "Accept " + money(theirs.price, cur)),
        el("button", { id: "reject", onclick: () => call("reject", withMessage({ offer_id: theirs.offer_id }, "offer-message")) }, "Reject")]
      : []);
    fill("events", o.events.map((e) =>
      el("li", {}, el("span", { class: "t", text: seconds(e.t) }), DR.describe(e, cur, view.role))));
    fill("messages", DR.messages(o.events).map((m) =>
      el("li", { class: m.by || "" }, el("span", { class: "t", text: seconds(m.t) + " " + (m.by === view.role ? "you" : m.by) }), m.text)));
    text("briefing", view.briefing);
    const outcome = document.getElementById("outcome");
    outcome.textContent = over
      ? (o.outcome.status === "deal" ? "Deal at " + money(o.outcome.price, cur) : "No deal (" + o.outcome.end_reason + ")") +
        "; your surplus " + money(o.outcome.surplus, cur)
      : "";
    show("next", over && view.can_start_next);
    for (const id of ["make-offer", "send-message", "wait", "walk-away"]) {
      document.getElementById(id).disabled = busy || over;
    }
    document.getElementById("next").disabled = busy;
    fill("results", view.finished
      ? el("p", {}, "Finished negotiations: " + view.finished + "; your total surplus " + money(view.total_surplus, cur))
      : null);
  }

  function withMessage(args, id) {
    const message = document.getElementById(id).value.trim();
    if (message) args.message = message;
    return args;
  }

  async function call(tool, args) {
    if (busy) return;
    busy = true;
    if (view) render(view);
    try {
      const reply = await DR.api("/web/api/seat/call", { tool, arguments: args || {} });
      if (reply.error) {
        document.getElementById("refusals").prepend(el("li", { class: "refusal" }, reply.error.text));
      } else {
        document.getElementById("replies").prepend(el("li", {}, tool + ": " + reply.text));
        if (tool === "make_offer" || tool === "reject") document.getElementById("offer-message").value = "";
        if (tool === "send_message") document.getElementById("message").value = "";
      }
    } catch (problem) {
      document.getElementById("refusals").prepend(el("li", { class: "refusal" }, String(problem.message || problem)));
    } finally {
      busy = false;
      try { render(await DR.api("/web/api/seat")); } catch (problem) { status(String(problem.message), true); }
    }
  }

  function bind() {
    document.getElementById("make-offer").addEventListener("click", () => {
      const price = Number(document.getElementById("offer-price").value);
      call("make_offer", withMessage({ price }, "offer-message"));
    });
    document.getElementById("send-message").addEventListener("click", () =>
      call("send_message", { text: document.getElementById("message").value }));
    document.getElementById("wait").addEventListener("click", () => call("wait_for_opponent", {}));
    document.getElementById("walk-away").addEventListener("click", () => {
      if (confirm("Walk away for good? The negotiation ends without a deal.")) call("walk_away", {});
    });
    document.getElementById("next").addEventListener("click", () => call("new_negotiation", {}));
    document.getElementById("agree").addEventListener("click", async () => {
      try {
        await DR.api("/web/api/seat/consent", {});
        render(await DR.api("/web/api/seat"));
      } catch (problem) {
        status(String(problem.message), true);
      }
    });
  }

  if (!DR.token()) {
    status("this link has no token: open your seat's link", true);
    return;
  }
  bind();
  DR.stream("/web/api/seat/events", render, status);
})();
