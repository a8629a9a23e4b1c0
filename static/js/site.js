// Small behaviours shared by every page. Everything works without this file; it only adds.
(function () {
  "use strict";
  const KEY = "quizbank:theme";
  const ORDER = ["system", "light", "dark"];

  function stored() {
    try {
      return localStorage.getItem(KEY) || "system";
    } catch (e) {
      return "system";
    }
  }

  function apply(theme) {
    const root = document.documentElement;
    if (theme === "light" || theme === "dark") root.dataset.theme = theme;
    else delete root.dataset.theme;
    document.querySelectorAll("[data-theme-label]").forEach((el) => (el.textContent = theme));
  }

  function setUp() {
    apply(stored());
    const toggle = document.getElementById("theme-toggle");
    if (toggle) {
      toggle.addEventListener("click", () => {
        const next = ORDER[(ORDER.indexOf(stored()) + 1) % ORDER.length];
        try {
          if (next === "system") localStorage.removeItem(KEY);
          else localStorage.setItem(KEY, next);
        } catch (e) {
          /* storage refused: the choice lasts for this page only */
        }
        apply(next);
      });
    }
    // On a phone the filters start folded, so the results come first.
    const facets = document.querySelector("details.facets-panel");
    if (facets && window.matchMedia("(max-width: 52rem)").matches) facets.open = false;
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
})();

// A message above a page opened at an anchor (the welcome after signing up, which brings you back
// to the exercise you were on) would be scrolled out of view: it floats at the bottom of the
// window instead, until closed.
window.addEventListener("load", () => {
  window.requestAnimationFrame(() => {
    const box = document.getElementById("messages");
    if (!box) return;
    const rect = box.getBoundingClientRect();
    if (rect.bottom > 0 && rect.top < window.innerHeight) return;
    box.classList.add("floating");
    const close = document.createElement("button");
    close.type = "button";
    close.className = "quiet";
    close.textContent = "Close";
    close.addEventListener("click", () => box.classList.remove("floating"));
    box.append(close);
  });
});

// Filters send every field; leave the empty ones out so the address bar stays readable.
document.addEventListener("htmx:configRequest", (event) => {
  if (event.detail.verb !== "get") return;
  for (const [name, value] of Object.entries(event.detail.parameters)) {
    if (value === "") delete event.detail.parameters[name];
  }
});

// Back and Forward on the list: htmx puts back the page as it saved it, but a saved page keeps
// only the markup, not what was ticked or typed since it was rendered. The address holds the
// filters, so the form is set from it, and the next change sends what the results show.
function syncFiltersFromAddress() {
  const form = document.getElementById("filters");
  if (!form) return;
  const params = new URLSearchParams(window.location.search);
  for (const field of form.elements) {
    if (!field.name || field.type === "submit" || field.type === "button") continue;
    if (field.type === "checkbox" || field.type === "radio") {
      field.checked = params.getAll(field.name).includes(field.value);
    } else if (field.type !== "hidden") {
      field.value = params.get(field.name) || "";
    }
  }
}
document.addEventListener("htmx:historyRestore", syncFiltersFromAddress);
window.addEventListener("pageshow", (event) => {
  if (event.persisted) syncFiltersFromAddress(); // the browser's back-forward cache
});

// A code form (the question page, a review card, a mock interview): Ctrl/Cmd+Enter runs the
// examples, Ctrl/Cmd+Shift+Enter submits. The shortcut clicks the button, exactly as a mouse would:
// htmx sends the clicked button's name and value (mode=examples or mode=submit) only for a click
// it saw, so form.requestSubmit(button) sent no mode and the server took it for a scored
// submission (issue 27). A form without a "run examples" button ignores Ctrl+Enter rather than
// submitting. Listening in the capture phase on the document puts this before the editor's own
// key handling, whose fallback would submit the form.
document.addEventListener(
  "keydown",
  (event) => {
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) return;
    const form = event.target.closest && event.target.closest("form");
    if (!form || !form.querySelector("textarea[data-editor]")) return;
    event.preventDefault();
    event.stopPropagation();
    // Inside "Try your own input", Ctrl+Enter runs those lines (also free).
    const scope = event.target.closest("[data-shortcut-scope]");
    const free = (scope && scope.querySelector("[data-shortcut=run]")) || form.querySelector("[data-shortcut=examples]");
    const button = event.shiftKey ? form.querySelector("[data-shortcut=submit]") : free;
    if (button && !button.disabled) button.click();
  },
  true,
);

// A new run clears the previous verdict at once, so an old result is never read as the new one.
document.addEventListener("htmx:beforeRequest", (event) => {
  const form = event.detail.elt;
  if (!form || form.id !== "submit-form") return;
  const verdict = document.getElementById("verdict");
  if (verdict) {
    verdict.replaceChildren();
    const note = document.createElement("p");
    note.className = "small muted";
    note.setAttribute("role", "status");
    note.textContent = form.dataset.pending || "Sending to the grader…";
    verdict.append(note);
  }
  // "Your draft was restored" was true when the page opened, not after a run.
  const draft = document.getElementById("draft-status");
  if (draft) draft.textContent = "";
});

// "Try again" on a quick check: back to its first answer choice (or text box).
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-focus]");
  if (!button) return;
  const form = document.querySelector(button.dataset.focus);
  const field = form && form.querySelector("input:not([type=hidden])");
  if (field) field.focus();
});

// A verdict that arrives below the fold is brought into view (the editor stays where it is).
document.addEventListener("htmx:afterSwap", (event) => {
  const target = event.detail.target;
  if (target && target.id === "verdict" && target.querySelector(".verdict:not(.pending)")) {
    target.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }
});

// A mock interview's countdown. The server keeps the real clock (an answer after the end is
// refused); this shows it ticking and, three seconds before the end, sends the answer typed so far
// as the answer (nothing typed: it reloads at zero so the report appears).
(function () {
  "use strict";
  const SEND_BEFORE = 3; // seconds: the answer must reach the server before its clock runs out
  function pad(n) {
    return String(n).padStart(2, "0");
  }
  function typed(form) {
    for (const field of form.elements) {
      if (field.name === "text" && field.value.trim()) return true;
      if (field.name === "code" && field.editor && field.value !== field.editor.starter) return true;
      if (field.name.startsWith("check-") && (field.type === "text" ? field.value.trim() : field.checked)) {
        return true;
      }
    }
    return false;
  }
  function start() {
    const timer = document.querySelector("[data-ends-at]");
    if (!timer) return;
    // The server's seconds left when it sent the page, counted from when the page's response
    // began to arrive: a wrong clock here does not matter, nor does a slow page load.
    const nav = performance.getEntriesByType ? performance.getEntriesByType("navigation")[0] : null;
    const arrived = nav && nav.responseStart ? performance.timeOrigin + nav.responseStart : Date.now();
    const ends = arrived + Number(timer.dataset.secondsLeft) * 1000;
    const out = timer.querySelector("[data-countdown]");
    const answer = document.getElementById("interview-answer");
    let sent = false;
    function tick() {
      const left = Math.max(0, Math.round((ends - Date.now()) / 1000));
      const h = Math.floor(left / 3600);
      const m = Math.floor((left % 3600) / 60);
      out.textContent = (h ? h + ":" + pad(m) : String(m)) + ":" + pad(left % 60);
      if (left <= 60) timer.classList.add("ending");
      if (!sent && left <= SEND_BEFORE && answer && typed(answer)) {
        sent = true;
        clearInterval(handle);
        const note = document.createElement("p");
        note.className = "notice";
        note.setAttribute("role", "status");
        note.textContent = "Time is up: your answer is sent as it stands.";
        answer.prepend(note);
        answer.requestSubmit(answer.querySelector("#answer-submit"));
        return;
      }
      if (left === 0) {
        clearInterval(handle);
        window.location.reload();
      }
    }
    const handle = setInterval(tick, 1000);
    tick();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

// A plain text answer with a data-draft-key (a mock interview's) is kept in this browser as it is
// typed, so a reload or a closed tab does not lose it. (The code editor keeps its own draft.)
(function () {
  "use strict";
  function setUp() {
    let store = null;
    try {
      store = window.localStorage;
    } catch (e) {
      return; // storage refused: the answer lives as long as the page
    }
    document.querySelectorAll("textarea[data-draft-key]:not([data-editor])").forEach((field) => {
      const key = field.dataset.draftKey;
      const saved = store.getItem(key);
      if (saved && !field.value) field.value = saved;
      field.addEventListener("input", () => {
        try {
          if (field.value) store.setItem(key, field.value);
          else store.removeItem(key);
        } catch (e) {
          /* storage full or refused */
        }
      });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
})();

// Review by keyboard: Space shows the answer, then 1-4 rate it (again, hard, good, easy). Keys
// typed into a field, or with a modifier, are left alone.
document.addEventListener("keydown", (event) => {
  const card = document.querySelector("[data-review-keys]");
  if (!card || event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
  const target = event.target;
  if (target.closest && target.closest("input, textarea, select, [contenteditable], .cm-editor")) return;
  const answer = card.querySelector("details#answer");
  if (!answer) return;
  if (event.key === " " && !answer.open) {
    event.preventDefault();
    // Focus stays put: a button focused now would be pressed by this Space's keyup.
    answer.open = true;
    return;
  }
  const ratings = { 1: "again", 2: "hard", 3: "good", 4: "easy" };
  if (answer.open && ratings[event.key]) {
    const button = answer.querySelector("#rate-" + ratings[event.key]);
    if (!button) return;
    event.preventDefault();
    button.click(); // a click, so htmx sends the button's value as it does for a mouse
  }
});

// Review: U undoes the last rating, wherever the review page is (code cards included). Keys
// typed into a field, or with a modifier, are left alone.
document.addEventListener("keydown", (event) => {
  if (event.key !== "u" && event.key !== "U") return;
  if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
  const target = event.target;
  if (target.closest && target.closest("input, textarea, select, [contenteditable], .cm-editor")) return;
  const undo = document.getElementById("review-undo");
  if (!undo) return;
  event.preventDefault();
  undo.click();
});

// During an outage the exercise form gets a 503 with a message for its verdict area: show it
// (htmx leaves error responses unswapped by default), so the learner knows why nothing happened.
document.addEventListener("htmx:beforeSwap", (event) => {
  if (event.detail.xhr.status === 503 && event.detail.target && event.detail.target.id === "verdict") {
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
});

// Signing out clears this browser's code drafts (they are keyed by learner, so another learner
// never sees them; clearing also leaves nothing behind on a shared machine).
document.addEventListener("submit", (event) => {
  const action = event.target.getAttribute && event.target.getAttribute("action");
  if (!action || !action.endsWith("/accounts/logout/")) return;
  try {
    for (let i = localStorage.length - 1; i >= 0; i--) {
      const name = localStorage.key(i);
      if (name && (name.startsWith("quizbank:draft:") || name.startsWith("quizbank:review:"))) {
        localStorage.removeItem(name);
      }
    }
  } catch (e) {
    /* storage refused: there are no drafts to clear */
  }
});
