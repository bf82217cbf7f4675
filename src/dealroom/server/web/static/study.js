// The study page: a researcher follows every participant of a study live, pauses, resumes or
// closes it, and downloads its data as CSV.
"use strict";

(() => {
  const { el, fill, text, money } = DR;
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
    text("counts", Object.entries(view.states).map(([s, n]) => n + " " + s).join(", ") +
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
    text("study-status", STATUS[view.status] +
      (view.status_since === null ? "" : " (since " + view.status_since + ")"));
    byId("pause").classList.toggle("hidden", view.status !== "open");
    byId("resume").classList.toggle("hidden", view.status !== "paused");
    byId("close-study").classList.toggle("hidden", view.status === "closed");
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

  const STATUS = {
    open: "Open: the study admits participants.",
    paused: "Paused: its URL admits nobody new; everyone already in goes on.",
    closed: "Closed: nobody new; every part ends once its negotiation has ended.",
  };
  const byId = (id) => document.getElementById(id);

  async function change(status) {
    text("control-status", "");
    try {
      const response = await fetch("/web/api/study/status", {
        method: "POST", cache: "no-store",
        headers: { Authorization: "Bearer " + (DR.token() || ""), "Content-Type": "application/json" },
        body: JSON.stringify({ status }),
      });
      if (!response.ok) {
        const data = await response.json().catch(() => ({}));
        throw new Error(data.error || "HTTP " + response.status);
      }
      render(await response.json());
    } catch (problem) {
      text("control-status", "Could not change the status: " + String(problem.message || problem));
    }
  }

  byId("pause").addEventListener("click", () => change("paused"));
  byId("resume").addEventListener("click", () => change("open"));
  byId("close-study").addEventListener("click", () => {
    if (window.confirm("Close the study for good? Nobody new is admitted, and every participant's " +
      "part ends once their negotiation has ended (paid for what they finished).")) change("closed");
  });

  if (!DR.token()) {
    status("this link has no token: open the study's link", true);
    return;
  }
  DR.stream("/web/api/study/events", render, status);
})();
