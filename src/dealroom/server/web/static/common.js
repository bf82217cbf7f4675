// Shared by the dealroom pages: the token, the JSON API, live streams, safe DOM building.
// Text from the server (messages, names) is only ever written with textContent.
"use strict";

const DR = (() => {
  const store = "dealroom:" + location.pathname;

  // The link's token: read from the fragment (never sent to the server), kept for this tab.
  function token() {
    const found = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (found) {
      sessionStorage.setItem(store, decodeURIComponent(found[1]));
      history.replaceState(null, "", location.pathname + location.search);
    }
    return sessionStorage.getItem(store);
  }

  // Another link opened in the same tab changes only the fragment (no new page): load the page
  // again, so that it never goes on showing the last token's view.
  window.addEventListener("hashchange", () => {
    if (/(?:^#|&)token=/.test(location.hash)) location.reload();
  });

  function headers(extra) {
    return Object.assign({ Authorization: "Bearer " + (token() || "") }, extra || {});
  }

  async function api(path, body) {
    const init = { headers: headers(), cache: "no-store" };
    if (body !== undefined) {
      init.method = "POST";
      init.headers = headers({ "Content-Type": "application/json" });
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    const data = await response.json().catch(() => ({ error: "HTTP " + response.status }));
    if (!response.ok) throw new Error(data.error || "HTTP " + response.status);
    return data;
  }

  // A POST that outlives the page (a tab being closed): fetch with keepalive, as sendBeacon
  // would, but with the bearer header sendBeacon cannot send. Fire and forget.
  function beacon(path, body) {
    const init = {
      method: "POST", keepalive: true, cache: "no-store",
      headers: headers({ "Content-Type": "application/json" }), body: JSON.stringify(body),
    };
    fetch(path, init).catch(() => {});
  }

  // Server-sent events over fetch (EventSource cannot send a header): calls onView with each
  // view, reconnects when a stream ends, reports "live" / "reconnecting" / an error.
  async function stream(path, onView, onStatus) {
    for (;;) {
      try {
        const response = await fetch(path, { headers: headers(), cache: "no-store" });
        if (!response.ok) {
          const data = await response.json().catch(() => ({}));
          onStatus(data.error || "HTTP " + response.status, true);
          if (response.status === 401) return;
          await pause(2000);
          continue;
        }
        onStatus("live", false);
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const chunk = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = chunk
              .split("\n")
              .filter((line) => line.startsWith("data: "))
              .map((line) => line.slice(6))
              .join("\n");
            if (data) onView(JSON.parse(data));
          }
        }
      } catch (problem) {
        onStatus("reconnecting", true);
        await pause(1000);
      }
    }
  }

  function pause(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  // An element with attributes and children (strings become text nodes: never parsed as HTML).
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function fill(id, ...children) {
    const node = document.getElementById(id);
    node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
    return node;
  }

  function text(id, value) {
    document.getElementById(id).textContent = value;
  }

  function money(value, currency) {
    const n = Number(value);
    try {
      return new Intl.NumberFormat("en-US", { style: "currency", currency }).format(n);
    } catch (problem) {
      return currency + " " + n.toFixed(2);
    }
  }

  function seconds(t) {
    return Number(t).toFixed(1) + " s";
  }

  // One event as a line of text, from the point of view of `viewer` (a role) or a spectator.
  function describe(event, currency, viewer) {
    const who = event.by === null ? "the clock" : event.by === viewer ? "you" : event.by;
    const said = (m) => (m ? ': "' + m + '"' : "");
    switch (event.type) {
      case "offer_made":
        return who + " offered " + money(event.price, currency) + " (" + event.offer_id + ")" + said(event.message);
      case "offer_withdrawn":
        return who + " withdrew " + event.offer_id;
      case "offer_accepted":
        return who + " accepted " + event.offer_id + " at " + money(event.price, currency);
      case "offer_rejected":
        return who + " rejected " + event.offer_id + said(event.message);
      case "message_sent":
        return who + ': "' + event.text + '"';
      case "walked_away":
        return who + " walked away" + said(event.message);
      case "negotiation_ended":
        return "ended (" + event.reason + ")" + (event.price ? " at " + money(event.price, currency) : "");
      default:
        return event.type;
    }
  }

  // The messages of a negotiation (cheap talk, and words sent with offers and rejections).
  function messages(events) {
    return events
      .map((e) => ({ t: e.t, by: e.by, text: e.type === "message_sent" ? e.text : e.message }))
      .filter((m) => m.text);
  }

  // Clock time as a person reads it, as the server writes it (people_log.clock_time): "1:05".
  function clockTime(t) {
    const whole = Math.max(Math.floor(Number(t)), 0);
    return Math.floor(whole / 60) + ":" + String(whole % 60).padStart(2, "0");
  }

  function clock(view, id, format) {
    const deadline = view.scenario ? view.scenario.deadline : view.observation.scenario.deadline;
    const now = view.now !== undefined ? view.now : view.observation.now;
    const at = format || seconds;
    text(id + "-text", at(now) + " of " + at(deadline) + (view.clock === "virtual" ? " (virtual clock)" : " (wall clock)"));
    document.getElementById(id + "-bar").style.width = Math.min(100, (100 * now) / deadline) + "%";
  }

  return { token, api, beacon, stream, el, fill, text, money, seconds, clockTime, describe, messages, clock };
})();
