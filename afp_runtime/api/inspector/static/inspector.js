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

// What is on the page stays as it was; the note says why it no longer moves.
function paused(error) {
  liveNote(error instanceof SignedOut
    ? "Live updates stopped: signed out. Sign in again to follow the agents."
    : "Live updates paused: the host did not answer.");
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

function replaceKeepingFocus(container, nodes) {
  const place = focusedPlace(container);
  container.replaceChildren(...nodes);
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
      liveNote("Updated live.");
    })
    .catch(paused);
}

// Whether someone is writing in the questions' forms: then they are left as they are.
function editing(section) {
  if (section.contains(document.activeElement) && document.activeElement !== section) return true;
  for (const field of section.querySelectorAll("textarea, input")) {
    if (field.type === "radio" ? field.checked : field.value) return true;
  }
  return false;
}

function swapTimeline(fresh) {
  const turns = document.getElementById("live-turns");
  const newTurns = fresh.getElementById("live-turns");
  if (turns && newTurns) {
    // A run someone folded stays folded.
    const closed = new Set(Array.from(
      turns.querySelectorAll("details[data-run]:not([open])"), (d) => d.dataset.run));
    replaceKeepingFocus(turns, newTurns.childNodes);
    for (const run of turns.querySelectorAll("details[data-run]")) {
      if (closed.has(run.dataset.run)) run.open = false;
    }
  }
  const questions = document.getElementById("live-questions");
  const newQuestions = fresh.getElementById("live-questions");
  if (questions && newQuestions && !editing(questions)) {
    questions.replaceChildren(...newQuestions.childNodes);
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
        liveNote("Updated live.");
      })
      .catch(paused)
      .finally(() => {
        busy = false;
        if (again) { again = false; schedule(); }
      });
  };
  const schedule = () => { if (timer === null) timer = setTimeout(refresh, 150); };
  const connect = () => {
    const events = new EventSource(anchor.dataset.events);
    events.onmessage = (message) => {
      let event = null;
      try { event = JSON.parse(message.data); } catch (error) { event = null; }
      if (event !== null && event.type === "model.delta") { reply.delta(event); return; }
      if (event === null || REPLY_ENDS.has(event.type)) reply.clear();
      schedule();
    };
    // Opened (or reopened after the host came back): catch up on what happened unheard.
    events.onopen = () => { liveNote("Updates live while the agent works."); schedule(); };
    events.onerror = () => {
      if (events.readyState !== EventSource.CLOSED) {
        liveNote("Live updates paused: reconnecting to the host.");
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
