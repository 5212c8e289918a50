// The inspector's own script (no inline script is allowed by the page's CSP). It only ever
// inserts HTML the server rendered, where every value from a conversation is escaped.
"use strict";

function refreshLive(element) {
  const url = element.dataset.live;
  const note = document.getElementById("live-state");
  fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
    .then((response) => {
      if (!response.ok) throw new Error(String(response.status));
      return response.text();
    })
    .then((html) => {
      const parsed = new DOMParser().parseFromString(
        "<table><tbody>" + html + "</tbody></table>", "text/html");
      element.replaceChildren(...parsed.querySelector("tbody").childNodes);
      if (note) note.textContent = "Updated live.";
    })
    .catch(() => { if (note) note.textContent = "Live updates paused: the host did not answer."; });
}

document.addEventListener("DOMContentLoaded", () => {
  for (const element of document.querySelectorAll("[data-live]")) {
    setInterval(() => refreshLive(element), 1000);
  }
});
