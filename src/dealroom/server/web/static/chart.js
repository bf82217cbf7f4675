// The offers chart: both sides' offers over time as inline SVG, redrawn from each view.
// `events` are the negotiation's events; `lines` are horizontal references ({label, value, cls}).
"use strict";

DR.chart = (svg, { events, deadline, now, lines, currency }) => {
  const NS = "http://www.w3.org/2000/svg";
  // As wide as drawn (300 to 640 units), so that its labels keep their size on a phone.
  const W = Math.round(Math.min(640, Math.max(300, svg.clientWidth || 640)));
  const H = 280, L = 72, R = 16, T = 16, B = 34;
  const node = (tag, attrs, label) => {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
    if (label !== undefined) n.textContent = label;
    return n;
  };
  const offers = events.filter((e) => e.type === "offer_made");
  const deal = events.find((e) => e.type === "offer_accepted");
  const prices = offers.map((e) => Number(e.price)).concat(lines.map((l) => Number(l.value)));
  let low = Math.min(...prices), high = Math.max(...prices);
  if (!isFinite(low)) { low = 0; high = 1; }
  const pad = Math.max((high - low) * 0.08, high * 0.02, 0.01);
  low = Math.max(0, low - pad); high += pad;
  const end = Math.max(deadline, 1e-9);
  const x = (t) => L + (Math.min(t, end) / end) * (W - L - R);
  const y = (p) => H - B - ((p - low) / (high - low)) * (H - T - B);

  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.replaceChildren();
  for (let i = 0; i <= 4; i++) {
    const p = low + ((high - low) * i) / 4;
    svg.append(node("line", { x1: L, x2: W - R, y1: y(p), y2: y(p), class: "grid" }));
    svg.append(node("text", { x: L - 6, y: y(p) + 4, "text-anchor": "end" }, DR.money(p, currency)));
  }
  // Four steps of time, two on a narrow chart (a market's column, a phone: four would touch).
  const steps = W < 420 ? 2 : 4;
  for (let i = 0; i <= steps; i++) {
    const t = (end * i) / steps;
    // The last label ends at the axis's end (centred there, it would be clipped).
    const anchor = i === steps ? "end" : "middle";
    svg.append(node("text", { x: x(t), y: H - B + 16, "text-anchor": anchor }, DR.seconds(t)));
  }
  svg.append(node("line", { x1: L, x2: L, y1: T, y2: H - B, class: "axis" }));
  svg.append(node("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" }));
  svg.append(node("line", { x1: x(now), x2: x(now), y1: T, y2: H - B, class: "now" }));
  lines.forEach((ref, i) => {
    // Labels alternate right and left, so that two close lines keep readable labels.
    const right = i % 2 === 0;
    svg.append(node("line", { x1: L, x2: W - R, y1: y(ref.value), y2: y(ref.value), class: "ref " + ref.cls }));
    svg.append(node("text", {
      x: right ? W - R - 4 : L + 6, y: y(ref.value) - 4, "text-anchor": right ? "end" : "start", class: ref.cls,
    }, ref.label));
  });
  for (const role of ["buyer", "seller"]) {
    const mine = offers.filter((e) => e.by === role);
    if (mine.length > 1) {
      const points = mine.map((e) => `${x(e.t).toFixed(1)},${y(Number(e.price)).toFixed(1)}`);
      svg.append(node("polyline", { points: points.join(" "), class: "path " + role }));
    }
    for (const e of mine) {
      const dot = node("circle", { cx: x(e.t), cy: y(Number(e.price)), r: 4, class: "offer " + role });
      dot.append(node("title", {}, `${role} ${DR.money(e.price, currency)} at ${DR.seconds(e.t)}`));
      svg.append(dot);
    }
  }
  if (deal) {
    svg.append(node("circle", { cx: x(deal.t), cy: y(Number(deal.price)), r: 7, class: "deal" }));
  }
  svg.dataset.offers = String(offers.length);
};
