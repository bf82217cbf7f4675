// The seat page's parts that are not the negotiation itself: updates in place, announcements,
// a study's instructions and the final screen. Text is only ever written with textContent.
"use strict";

DR.seat = (() => {
  const { el, fill, money } = DR;
  const byId = (id) => document.getElementById(id);

  // Update in place: change a node only when its text or visibility changed, so that focus,
  // selection and a screen reader's place survive the live updates (one a second on a wall
  // clock).
  function setText(id, value) {
    const node = byId(id);
    const next = value === null || value === undefined ? "" : String(value);
    if (node.textContent !== next) node.textContent = next;
    return node;
  }

  function show(id, visible) {
    const node = byId(id);
    if (node.classList.contains("hidden") !== !visible) node.classList.toggle("hidden", !visible);
    return node;
  }

  // Focus `id` when the element that had focus is gone (hidden, removed, or the page's body):
  // a keyboard user keeps their place, and a new part of the page is read from its heading.
  function refocus(id, preventScroll) {
    const active = document.activeElement;
    const lost = !active || active === document.body || active.offsetParent === null;
    if (lost) byId(id).focus({ preventScroll: Boolean(preventScroll) });
  }

  // The polite live region, a log: each announcement is a new line that a screen reader reads
  // once, when it is idle, so two close together are both heard. The last few lines are kept.
  function announce(...lines) {
    const text = lines.filter(Boolean).join(" ");
    if (!text) return;
    const log = byId("announce");
    log.append(el("p", {}, text));
    while (log.childElementCount > 6) log.firstElementChild.remove();
  }

  // A study's instructions (headings, paragraphs, list items), grouped into lists.
  function instructions(id, blocks) {
    const nodes = [];
    let list = null;
    for (const block of blocks || []) {
      const tag = { bullet: "ul", number: "ol" }[block.kind];
      if (!tag) {
        list = null;
        nodes.push(el(block.kind === "heading" ? "h3" : "p", {}, block.text));
        continue;
      }
      if (!list || list.tagName.toLowerCase() !== tag) {
        list = el(tag, {});
        nodes.push(list);
      }
      list.append(el("li", {}, block.text));
    }
    const key = JSON.stringify(blocks || []);
    const node = byId(id);
    if (node.dataset.key !== key) {
      node.dataset.key = key;
      fill(id, nodes);
    }
    return nodes.length > 0;
  }

  const ENDS = {
    accepted: "deal",
    deadline: "time ran out",
    walk_away: "a side walked away",
    forfeit: "a side forfeited (too many refused moves)",
    action_limit: "the move limit was reached",
    sold_elsewhere: "the seller sold the item to another buyer",
  };

  // `events` and `role` (optional) say who walked away.
  function outcomeText(outcome, currency, events, role) {
    if (outcome.status === "deal") return "Deal at " + money(outcome.price, currency);
    const walked = (events || []).find((e) => e.type === "walked_away");
    const why = walked && role
      ? (walked.by === role ? "you walked away" : "the other side walked away")
      : ENDS[outcome.end_reason] || outcome.end_reason;
    return "No deal (" + why + ")";
  }

  // The final screen: every negotiation's result, the payment by the study's rule, the
  // completion code or link. Nothing on it starts another negotiation.
  function final(view) {
    const done = view.completion;
    const currency = done ? done.currency : view.observation.scenario.currency;
    const paid = done && done.payoff ? done.payoff.paid : [];
    const last = view.observation ? view.observation.outcome : null;
    const why = done ? done.message : "You have finished all your negotiations.";
    setText("final-message", why);
    const ended = last ? "Your last negotiation: " + (view.partner_left ||
      outcomeText(last, currency, view.observation.events, view.role)) +
      "; your surplus " + money(last.surplus, currency) + "." : "";
    setText("final-outcome", ended);
    // Each cell carries its column's name: a phone shows each row as a card of labelled lines.
    const cell = (label, text) => el("td", { "data-label": label }, text);
    const rows = view.results.map((r) => el("tr", {},
      cell("Negotiation", String(r.negotiation)), cell("Item", r.item),
      cell("Your value or cost", money(r.private_value, currency)),
      cell("Outcome", outcomeText(r.outcome, currency)),
      cell("Your surplus", money(r.outcome.surplus, currency)),
      cell("Pays", done && done.payoff ? (paid.includes(r.negotiation) ? "yes" : "no") : "")));
    const body = byId("final-results").tBodies[0];
    const key = JSON.stringify([view.results, paid]);
    if (body.dataset.key !== key) {
      body.dataset.key = key;
      body.replaceChildren(...rows);
    }
    const count = done ? done.negotiations : view.finished;
    const total = done ? done.total_surplus : view.total_surplus;
    setText("final-total", count + (count === 1 ? " negotiation" : " negotiations") +
      "; your total surplus " + money(total, currency) + ".");
    const payoff = done && done.payoff;
    show("payoff", Boolean(payoff));
    if (payoff) {
      setText("payoff-fee", money(payoff.show_up_fee, payoff.currency));
      setText("payoff-earnings", money(payoff.earnings, payoff.currency));
      setText("payoff-total", money(payoff.total, payoff.currency));
      setText("payoff-paid", paid.length
        ? (paid.length === 1 ? "Negotiation " + paid[0] + " pays." : "Negotiations " + paid.join(", ") + " pay.")
        : "No negotiation pays.");
      setText("payoff-rule", "The rule: " + payoff.rule);
    }
    const code = done && done.code;
    const url = done && done.url && /^https?:\/\//.test(done.url) ? done.url : null;
    show("completion", Boolean(code || url));
    show("completion-code-line", Boolean(code));
    setText("completion-code", code || "");
    show("completion-link-line", Boolean(url));
    if (url && byId("completion-link").getAttribute("href") !== url) {
      byId("completion-link").setAttribute("href", url);
    }
    return [
      ended,
      why,
      payoff ? "Your payment: " + money(payoff.total, payoff.currency) + "." : "",
      code ? "Your completion code is " + code + "." : "",
    ];
  }

  // Seconds in words, as the server writes them: "45 seconds", "1 minute 5 seconds".
  function duration(total) {
    const minutes = Math.floor(total / 60), rest = total % 60;
    const parts = minutes ? [minutes + (minutes === 1 ? " minute" : " minutes")] : [];
    if (rest || !minutes) parts.push(rest + (rest === 1 ? " second" : " seconds"));
    return parts.join(" ");
  }

  // A seat page's tool calls (POST /web/api/seat/call), the bilateral seat's and a market
  // seller's alike. Controls are never disabled while a call runs (a disabled button loses
  // keyboard focus): `buttons` (a selector) say so with aria-disabled. A press while a call is
  // answered (a wait, or any call on a market's clock, which waits for its turn) is not lost:
  // the last one is sent once that answer is in. Each reply goes to `replied(tool, args,
  // reply)`, each refusal's text to `refused`; the page is read again (`refresh`) after each.
  function caller({ buttons, notice, replied, refused, refresh }) {
    let busy = false;
    let queued = null;
    function setBusy(value) {
      busy = value;
      for (const node of document.querySelectorAll(buttons)) node.setAttribute("aria-disabled", String(value));
    }
    async function call(tool, args) {
      if (busy) {
        queued = [tool, args];
        setText(notice, "Sent once your last action is answered.");
        return;
      }
      setBusy(true);
      try {
        const reply = await DR.api("/web/api/seat/call", { tool, arguments: args || {} });
        if (reply.error) {
          refused(reply.error.text);
        } else {
          setText(notice, "");
          replied(tool, args || {}, reply);
        }
      } catch (problem) {
        refused(String(problem.message || problem));
      } finally {
        setBusy(false);
        await refresh();
        if (queued) {
          const [next, nextArgs] = queued;
          queued = null;
          call(next, nextArgs);
        }
      }
    }
    return call;
  }

  return { setText, show, refocus, announce, instructions, outcomeText, final, duration, caller };
})();
