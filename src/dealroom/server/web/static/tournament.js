// The tournament page: the runs of the server's results store, one run's progress and
// leaderboard, refreshed every few seconds while it is open.
"use strict";

(() => {
  const { el, fill, text } = DR;
  const REFRESH_MS = 3000;
  let chosen = new URLSearchParams(location.search).get("run");

  function status(message, bad) {
    const node = document.getElementById("status");
    node.textContent = message;
    node.className = bad ? "bad" : "";
  }

  const pct = (x) => (x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%");
  const interval = (e) => (e && e.value !== null && e.value !== undefined
    ? pct(e.value) + (e.low === null ? "" : " [" + pct(e.low) + ", " + pct(e.high) + "]") : "–");

  function showRuns(runs) {
    fill("runs",
      el("tr", {}, ["run", "stored", "planned", "state"].map((h) => el("th", { text: h }))),
      runs.map((r) => el("tr", {},
        el("td", {}, el("a", { href: "?run=" + encodeURIComponent(r.run), onclick: (event) => {
          event.preventDefault();
          chosen = r.run;
          history.replaceState(null, "", "?run=" + encodeURIComponent(r.run));
          refresh();
        } }, r.run)),
        el("td", { text: String(r.stored) }),
        el("td", { text: r.planned === null ? "–" : String(r.planned) }),
        el("td", { text: stateOf(r) }))));
  }

  // A run's state in words, from the same read as its counts (the server's liveness rule).
  const ago = (r) => (r.last_result_s === null ? "" : "last result " + r.last_result_s + " s ago");
  function stateOf(r) {
    switch (r.state) {
      case "finished": return "finished";
      case "running": return "running (" + ago(r) + ")";
      case "stopped": return "stopped at " + r.stored + " of " + r.planned + " (" + ago(r) + ")";
      case "idle": return ago(r);
      case "empty": return "nothing stored yet";
      default: return String(r.state);
    }
  }

  function progressText(run) {
    const counts = run.stored + (run.planned ? " of " + run.planned : "") +
      " negotiations stored, " + run.deals + " deals";
    if (run.state === "stopped") return "Not finished: " + counts + "; stopped (" + ago(run) + ")";
    if (run.state === "running") return counts + " (running, " + ago(run) + ")";
    if (run.state === "finished") return counts + " (finished)";
    if (run.state === "idle") return counts + " (" + ago(run) + ")";
    return "No negotiation stored yet";
  }

  function showRun(run) {
    document.getElementById("run-box").classList.remove("hidden");
    text("run-name", "Run " + run.run);
    const done = run.planned ? Math.min(1, run.stored / run.planned) : 1;
    document.getElementById("progress-bar").style.width = (100 * done) + "%";
    text("progress-text", progressText(run));
    fill("leaderboard",
      el("tr", {}, ["agent", "seat", "negotiations", "surplus share", "on deals", "deal rate", "IR violations"].map((h) => el("th", { text: h }))),
      run.leaderboard.map((row) => el("tr", { class: "board-row" },
        el("td", { text: row.agent }), el("td", { text: row.role }),
        el("td", { text: String(row.negotiations) }),
        el("td", { text: interval(row.surplus_share) }),
        el("td", { text: interval(row.surplus_share_on_deals) }),
        el("td", { text: interval(row.deal_rate) }),
        el("td", { text: String(row.ir_violations) }))));
    const agents = run.agents;
    const cell = (a, b) => {
      const found = run.head_to_head.find((h) => h.agent === a && h.opponent === b);
      return found ? pct(found.surplus_share) : "";
    };
    fill("h2h",
      el("tr", {}, el("th", { text: "" }), agents.map((a) => el("th", { text: a }))),
      agents.map((a) => el("tr", {}, el("td", { text: a }), agents.map((b) => el("td", { text: cell(a, b) })))));
    text("report-of", run.report_of < run.stored
      ? "The report below covers " + run.report_of + " of the " + run.stored + " stored negotiations; it catches up within a few refreshes."
      : "");
    showPlots(run);
  }

  // The report's plots are SVG documents drawn by the server (the printed report's own code);
  // each is shown as an image (an image runs no script), redrawn only when the report changes.
  let shownReport = null;
  let plotUrls = [];

  function legend(id, colors) {
    fill(id, Object.entries(colors).map(([agent, color]) => {
      const swatch = el("i", { class: "swatch" });
      swatch.style.background = color;
      return el("span", {}, swatch, agent);
    }), el("span", { text: "(circle: buyer, square: seller)" }));
  }

  function showPlots(run) {
    const key = run.run + "/" + run.report_of;
    if (key === shownReport) return;
    shownReport = key;
    plotUrls.forEach((url) => URL.revokeObjectURL(url));
    plotUrls = [];
    for (const [kind, svgs] of Object.entries(run.plots)) {
      fill("plots-" + kind, svgs.map((svg) => {
        const url = URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" }));
        plotUrls.push(url);
        const label = /aria-label="([^"]*)"/.exec(svg);
        return el("img", { src: url, alt: label ? label[1] : kind, "data-plot": kind });
      }));
    }
    legend("legend-tier", run.colors);
    legend("legend-feature", run.colors);
    const models = run.models;
    document.getElementById("models-box").classList.toggle("hidden", !models);
    if (models) {
      text("models-totals", "Run: " + models.totals);
      fill("models",
        el("tr", {}, models.columns.map((h) => el("th", { text: h }))),
        models.rows.map((row) => el("tr", { class: "model-row" }, row.map((c) => el("td", { text: c })))));
    }
  }

  async function refresh() {
    try {
      const { runs } = await DR.api("/web/api/runs");
      showRuns(runs);
      if (!chosen && runs.length) chosen = runs[runs.length - 1].run;
      if (chosen) showRun(await DR.api("/web/api/runs/" + encodeURIComponent(chosen)));
      status("updated " + new Date().toLocaleTimeString(), false);
    } catch (problem) {
      status(String(problem.message || problem), true);
    }
  }

  if (!DR.token()) {
    status("this link has no token: open it with #token=<admin token>", true);
    return;
  }
  refresh();
  setInterval(refresh, REFRESH_MS);
})();
