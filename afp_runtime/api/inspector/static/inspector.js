// The inspector's own script (no inline script is allowed by the page's CSP). It only ever
// inserts HTML the server rendered, where every value from a conversation is escaped.
"use strict";

function liveNote(text) {
  const note = document.getElementById("live-state");
  if (note) note.textContent = text;
}

// A page asked for without a session is sent to the sign-in page; that page is not fresh rows.
class SignedOut extends Error {}

function fetchPage(url) {
  const asked = { credentials: "same-origin", headers: { Accept: "text/html" }, redirect: "manual" };
  return fetch(url, asked).then((response) => {
    if (response.type === "opaqueredirect" || response.status === 401) throw new SignedOut();
    if (!response.ok) throw new Error(String(response.status));
    return response.text();
  });
}

// When the page last heard from the host: what it shows is as of then.
let lastHeard = new Date();

function heard() { lastHeard = new Date(); }

// A time for people, in UTC like the times the server renders.
function clockText(date) { return date.toISOString().slice(11, 19) + " UTC"; }

// The host stopped answering: a banner says so, and every status on the page says it is as of
// the last answer, so no row reads as current (docs/inspector.md#a-host-that-stops-answering).
// ``what`` names what went quiet. Done again on every failed retry: the texts only change
// when they would read differently, so a screen reader hears the alert once.
function stale(what) {
  const asOf = clockText(lastHeard);
  const banner = document.getElementById("host-stale");
  if (banner) {
    const text = "The host is not answering (" + what + "). What this page shows is as of "
      + asOf + ", its last answer; it keeps trying.";
    if (banner.textContent !== text) banner.textContent = text;
    banner.hidden = false;
  }
  liveNote("Live updates paused: the host did not answer.");
  const main = document.getElementById("main");
  if (!main) return;
  for (const status of main.querySelectorAll(".status")) {
    let note = status.nextElementSibling;
    if (!note || !note.classList.contains("stale-note")) {
      note = document.createElement("span");
      note.className = "stale-note";
      status.after(note);
    }
    const text = " (as of " + asOf + ", stale)";
    if (note.textContent !== text) note.textContent = text;
  }
  for (const row of main.querySelectorAll("[data-agent], [data-run], [data-question]")) {
    row.classList.add("stale");
  }
}

// The host answers again: the banner goes and so does every stale mark left on the page.
function answered(note) {
  heard();
  const banner = document.getElementById("host-stale");
  if (banner) { banner.hidden = true; banner.textContent = ""; }
  for (const mark of document.querySelectorAll(".stale-note")) mark.remove();
  for (const row of document.querySelectorAll(".stale")) row.classList.remove("stale");
  liveNote(note);
}

// What is on the page stays as it was; the note (signed out) or the banner (the host did not
// answer) says why it no longer moves.
function paused(what) {
  return (error) => {
    if (error instanceof SignedOut) {
      liveNote("Live updates stopped: signed out. Sign in again to follow the agents.");
    } else {
      stale(what);
    }
  };
}

// Which of a container's disclosures (runs, the settled questions) are open, by their key.
function disclosures(container) {
  const states = new Map();
  for (const d of container.querySelectorAll("details[data-run], details[data-keep]")) {
    states.set(d.dataset.run || d.dataset.keep, d.open);
  }
  return states;
}

// A disclosure the person opened or closed stays so in the fresh copy; new ones come as the
// server renders them (closed).
function restoreDisclosures(container, states) {
  for (const d of container.querySelectorAll("details[data-run], details[data-keep]")) {
    const key = d.dataset.run || d.dataset.keep;
    if (states.has(key)) d.open = states.get(key);
  }
}

// Where the keyboard is inside ``container``: a selector for the focused link, summary or
// control and its place among the matches, so a live swap can give focus back to its fresh copy
// (else a person tabbing through the page loses their place on every update).
function focusedPlace(container) {
  const active = document.activeElement;
  if (!active || active === container || !container.contains(active)) return null;
  let selector = active.tagName.toLowerCase();
  const href = active.getAttribute("href");
  if (active.id) selector = "#" + CSS.escape(active.id);
  else if (href !== null) selector += '[href="' + CSS.escape(href) + '"]';
  const matches = Array.from(container.querySelectorAll(selector));
  return { selector, index: matches.indexOf(active) };
}

// ``states`` (from ``disclosures()``): the runs and lists opened or closed before, set so
// again before focus returns (a link inside a closed run cannot take it).
function replaceKeepingFocus(container, nodes, states) {
  const place = focusedPlace(container);
  container.replaceChildren(...nodes);
  if (states) restoreDisclosures(container, states);
  if (place === null || place.index < 0) return;
  const again = container.querySelectorAll(place.selector)[place.index];
  if (again) again.focus({ preventScroll: true });
}

// The agents page: its rows, fetched every second.
function refreshRows(element) {
  fetchPage(element.dataset.live)
    .then((html) => {
      const parsed = new DOMParser().parseFromString(
        "<table><tbody>" + html + "</tbody></table>", "text/html");
      replaceKeepingFocus(element, parsed.querySelector("tbody").childNodes);
      answered("Updated live.");
    })
    .catch(paused("the agents' rows could not be fetched"));
}

// Whether someone is writing in the questions' forms: then they are left as they are.
function editing(section) {
  // (Focus on a form's control counts; on the settled questions' summary line it does not.)
  const active = document.activeElement;
  if (active && active !== section && section.contains(active) && active.closest("form")) {
    return true;
  }
  for (const field of section.querySelectorAll("textarea, input")) {
    if (field.type === "radio" ? field.checked : field.value) return true;
  }
  return false;
}

function swapTimeline(fresh) {
  const turns = document.getElementById("live-turns");
  const newTurns = fresh.getElementById("live-turns");
  if (turns && newTurns) {
    replaceKeepingFocus(turns, newTurns.childNodes, disclosures(turns));
  }
  const questions = document.getElementById("live-questions");
  const newQuestions = fresh.getElementById("live-questions");
  if (questions && newQuestions && !editing(questions)) {
    replaceKeepingFocus(questions, newQuestions.childNodes, disclosures(questions));
  }
  // A turn that arrived live can push the oldest one onto an older page: its link comes too.
  const pages = document.getElementById("live-pages");
  const newPages = fresh.getElementById("live-pages");
  if (pages && newPages) replaceKeepingFocus(pages, newPages.childNodes);
}

// A streamed reply as it arrives (``model.delta`` events, docs/inspector.md#timeline): its text
// and each tool call's argument text, always added as text nodes, never parsed as HTML. One
// send's fragments are shown until its call ends; the committed reply then is in the timeline.
function liveReply() {
  const section = document.getElementById("live-reply");
  if (!section) return { delta() {}, clear() {} };
  const head = document.getElementById("live-reply-head");
  const text = document.getElementById("live-reply-text");
  const calls = document.getElementById("live-reply-calls");
  let current = null;
  let items = [];
  const clear = () => {
    current = null;
    items = [];
    section.hidden = true;
    head.textContent = "";
    text.textContent = "";
    calls.replaceChildren();
  };
  const callItem = (index) => {
    if (!items[index]) {
      const item = document.createElement("li");
      const name = document.createElement("code");
      name.className = "tool";
      const args = document.createElement("code");
      args.className = "text args";
      item.append(name, " ", args);
      calls.append(item);
      items[index] = { name, args };
    }
    return items[index];
  };
  const delta = (event) => {
    const fragment = event.payload;
    // A retry's fragments (a new attempt) or the next call's replace what was shown.
    const key = [event.runId, fragment.epoch, fragment.attempt].join(" ");
    if (key !== current) {
      clear();
      current = key;
      head.textContent = "Run " + event.runId + ", call " + fragment.epoch
        + (fragment.attempt > 1 ? ", attempt " + fragment.attempt : "")
        + (fragment.index > 0 ? " (joined mid-reply)" : "");
      section.hidden = false;
    }
    if (fragment.text) text.append(fragment.text);
    if (fragment.toolCallIndex !== undefined) {
      const item = callItem(fragment.toolCallIndex);
      if (fragment.toolName) item.name.textContent = fragment.toolName;
      if (fragment.arguments) item.args.append(fragment.arguments);
    }
  };
  return { delta, clear };
}

// The events after which what a live reply showed is in the store (or never will be).
const REPLY_ENDS = new Set(["model.ended", "model.failed", "run.ended"]);

// The timeline: refetched when the agent's event stream says something happened, at most
// one fetch at a time and one more after it for whatever arrived meanwhile. A reply's
// fragments are shown as they come and fetch nothing.
function followTimeline(anchor) {
  const reply = liveReply();
  let timer = null;
  let busy = false;
  let again = false;
  const refresh = () => {
    timer = null;
    if (busy) { again = true; return; }
    busy = true;
    fetchPage(anchor.dataset.page)
      .then((html) => {
        swapTimeline(new DOMParser().parseFromString(html, "text/html"));
        answered("Updated live.");
      })
      .catch(paused("the timeline could not be fetched"))
      .finally(() => {
        busy = false;
        if (again) { again = false; schedule(); }
      });
  };
  const schedule = () => { if (timer === null) timer = setTimeout(refresh, 150); };
  const connect = () => {
    const events = new EventSource(anchor.dataset.events);
    events.onmessage = (message) => {
      heard();
      let event = null;
      try { event = JSON.parse(message.data); } catch (error) { event = null; }
      if (event !== null && event.type === "model.delta") { reply.delta(event); return; }
      if (event === null || REPLY_ENDS.has(event.type)) reply.clear();
      schedule();
    };
    // Opened (or reopened after the host came back): catch up on what happened unheard.
    events.onopen = () => { heard(); liveNote("Updates live while the agent works."); schedule(); };
    events.onerror = () => {
      if (events.readyState !== EventSource.CLOSED) {
        stale("the live stream dropped; reconnecting");
        return;
      }
      // The stream was refused (signed out, say) and the browser gives up on it: a page
      // fetch says why, and a new stream is tried a little later.
      schedule();
      setTimeout(connect, 5000);
    };
  };
  connect();
}

document.addEventListener("DOMContentLoaded", () => {
  for (const element of document.querySelectorAll("[data-live]")) {
    setInterval(() => refreshRows(element), 1000);
  }
  const timeline = document.getElementById("live-timeline");
  if (timeline) followTimeline(timeline);
});
