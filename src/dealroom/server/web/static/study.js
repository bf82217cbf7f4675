// The study page: a researcher follows every participant of a study live (read only) and
// downloads its data as CSV.
"use strict";

(() => {
  const { el, fill, text, money } = DR;
  const STATES = ["invited", "consenting", "waiting", "playing", "done", "timed_out", "dropped"];
  let shown = "";
  let configured = "";

  function status(message, bad) {
    const node = document.getElementById("status");
    node.textContent = message;
    node.className = bad ? "bad" : "";
  }

  const ago = (s) => (s === null ? "–" : s < 60 ? s + " s ago" : Math.floor(s / 60) + " min ago");

  function where(p) {
    if (p.state === "waiting") return "waiting for a partner for " + p.waiting_s + " s";
    if (p.room === null) return "–";
    return p.role + " in " + p.room;
  }

  function render(view) {
    text("title", "Study " + view.study);
    text("design", "created " + view.created);
    // The configuration in words, as the server renders it (study_config): shown as it comes.
    const settings = JSON.stringify(view.configuration);
    if (settings !== configured) {
      configured = settings;
      fill("configuration", view.configuration.flatMap((s) => [
        el("dt", { text: s.name }), el("dd", { text: s.value })]));
    }
    text("counts", STATES.map((s) => view.states[s] + " " + s).join(", ") +
      " (of " + view.participants.length + ")" +
      (view.join === null ? "" : " · study URL " + view.join + " · " + view.join_places + " places left") +
      (Object.keys(view.treatments).length ? " · treatments " +
        Object.entries(view.treatments).map(([t, n]) => t + " " + n).join(", ") : ""));
    fill("participants",
      el("tr", {}, ["participant", "state", "treatment", "played", "where", "surplus", "payment", "page"].map((h) =>
        el("th", { scope: "col", text: h }))),
      view.participants.map((p) => el("tr", { "data-participant": p.label, "data-state": p.state },
        el("th", { scope: "row", text: p.join_label === null ? p.label : p.label + " (" + p.join_label + ")" }),
        el("td", { text: p.state }),
        el("td", { text: p.treatment || "–" }),
        el("td", { text: p.played + " of " + view.negotiations + (p.practice ? " (+" + p.practice + " practice)" : "") +
          (p.quiz_attempts ? " · quiz " + p.quiz_attempts + "x" : "") }),
        el("td", {}, where(p), p.watch && p.state !== "waiting"
          ? [" · ", el("a", { href: p.watch, target: "_blank", rel: "noopener" }, "watch")] : null),
        el("td", { text: money(p.total_surplus, p.currency) }),
        el("td", { text: p.payment === null ? "–" : money(p.payment, p.payment_currency) }),
        el("td", { text: p.last_event === null ? "–" : p.last_event + " " + ago(p.last_event_s) }))));
    const names = view.exports.join(",");
    if (names !== shown) {
      shown = names;
      fill("exports", view.exports.map((name) =>
        el("button", { "data-export": name, onclick: () => download(view.study, name) }, "Download " + name + ".csv")));
    }
  }

  // A CSV needs the study's token in a header: fetched, then saved from a blob: URL.
  async function download(study, name) {
    text("export-status", "Downloading " + name + ".csv ...");
    try {
      const response = await fetch("/web/api/study/" + name + ".csv", {
        headers: { Authorization: "Bearer " + (DR.token() || "") }, cache: "no-store",
      });
      if (!response.ok) throw new Error("HTTP " + response.status);
      const url = URL.createObjectURL(await response.blob());
      const link = el("a", { href: url, download: study + "-" + name + ".csv" });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      text("export-status", "Saved " + study + "-" + name + ".csv");
    } catch (problem) {
      text("export-status", "Could not download " + name + ".csv: " + String(problem.message || problem));
    }
  }

  if (!DR.token()) {
    status("this link has no token: open the study's link", true);
    return;
  }
  DR.stream("/web/api/study/events", render, status);
})();
