// The room page: a spectator's live view of a room's current negotiation (of a market room:
// its threads side by side, drawn by market.js).
"use strict";

(() => {
  const { el, fill, text, money, seconds } = DR;

  function render(view) {
    if (view.kind === "market") {
      DR.market.render(view);
      return;
    }
    DR.keepMain("negotiation");
    const s = view.scenario, cur = s.currency;
    text("item", s.item.name + " (negotiation " + view.negotiation + ")");
    text("list-price", "list price " + money(s.list_price, cur));
    text("seats", "buyer: " + view.seats.buyer + " · seller: " + view.seats.seller);
    const lines = [{ label: "list price", value: Number(s.list_price), cls: "list" }];
    const r = view.result;
    if (r) {
      lines.push({ label: "buyer value", value: Number(r.buyer_value), cls: "value" });
      lines.push({ label: "seller cost", value: Number(r.seller_cost), cls: "cost" });
    }
    DR.chart(document.getElementById("chart"), {
      events: view.events, deadline: s.deadline, now: view.now, lines, currency: cur,
    });
    DR.clock(view, "clock");
    fill("events", view.events.map((e) =>
      el("li", {}, el("span", { class: "t", text: seconds(e.t) }), DR.describe(e, cur, null))));
    fill("messages", DR.messages(view.events).map((m) =>
      el("li", { class: m.by || "" }, el("span", { class: "t", text: seconds(m.t) + " " + m.by }), m.text)));
    const box = document.getElementById("outcome");
    const split = document.getElementById("split");
    if (!r) {
      box.textContent = "The negotiation is running; private values are shown once it ends.";
      box.className = "outcome muted";
      split.classList.add("hidden");
      return;
    }
    box.className = "outcome";
    box.textContent = r.status === "deal"
      ? "Deal at " + money(r.price, cur) + " (" + r.end_reason + ")"
      : "No deal (" + r.end_reason + (r.ended_by ? " by the " + r.ended_by : "") + ")";
    const share = (x) => (x === null ? "–" : (100 * x).toFixed(1) + "%");
    split.classList.remove("hidden");
    fill("split",
      el("tr", {}, el("th", { text: "" }), el("th", { text: "private value" }), el("th", { text: "surplus" }), el("th", { text: "share of the gains" })),
      el("tr", {}, el("td", { text: "buyer" }), el("td", { text: money(r.buyer_value, cur) }), el("td", { text: money(r.buyer_surplus, cur) }), el("td", { text: share(r.buyer_share) })),
      el("tr", {}, el("td", { text: "seller" }), el("td", { text: money(r.seller_cost, cur) }), el("td", { text: money(r.seller_surplus, cur) }), el("td", { text: share(r.seller_share) })),
      el("tr", {}, el("td", { text: "gains from trade" }), el("td", { text: money(r.gains, cur) }), el("td", { text: "" }), el("td", { text: "" })));
  }

  function status(message, bad) {
    const node = document.getElementById("status");
    node.textContent = message;
    node.className = bad ? "bad" : "";
  }

  if (!DR.token()) {
    status("this link has no token: open the spectator link of the room", true);
    return;
  }
  DR.stream("/web/api/room/events", render, status);
})();
