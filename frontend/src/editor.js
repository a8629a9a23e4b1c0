// The code editor of exercise pages: CodeMirror 6 over a plain <textarea data-editor="python">.
//
// The textarea stays in the form (hidden) and is kept in sync, so the form submits the same field
// with or without this script. The learner's draft is kept in localStorage under the textarea's
// data-draft-key, which names the signed-in user (a shared browser never shows one learner's draft
// to the next; signing out clears them, site.js). A draft typed before signing in is kept under
// the anonymous key, named by data-draft-adopt once signed in, and moves to the learner's own key.
import { indentWithTab } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";
import { HighlightStyle, indentUnit, syntaxHighlighting } from "@codemirror/language";
import { EditorState, Prec } from "@codemirror/state";
import { keymap } from "@codemirror/view";
import { tags as t } from "@lezer/highlight";
import { EditorView, basicSetup } from "codemirror";

// Colours come from CSS custom properties, so the editor follows the site's light and dark themes.
const theme = EditorView.theme({
  "&": {
    color: "var(--fg)",
    backgroundColor: "var(--code-bg)",
    border: "1px solid var(--border)",
    borderRadius: ".5rem",
    fontSize: ".92rem",
  },
  "&.cm-focused": { outline: "3px solid var(--focus)", outlineOffset: "2px" },
  ".cm-scroller": { fontFamily: "var(--mono)", lineHeight: "1.5", minHeight: "12rem", maxHeight: "32rem" },
  ".cm-content": { caretColor: "var(--fg)", padding: ".5rem 0" },
  ".cm-cursor, .cm-dropCursor": { borderLeftColor: "var(--fg)", borderLeftWidth: "2px" },
  ".cm-gutters": {
    backgroundColor: "var(--card)",
    color: "var(--muted)",
    borderRight: "1px solid var(--border)",
    borderRadius: ".5rem 0 0 .5rem",
  },
  ".cm-activeLine": { backgroundColor: "var(--cm-active-line)" },
  ".cm-activeLineGutter": { backgroundColor: "var(--cm-active-line)", color: "var(--fg)" },
  "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground, .cm-content ::selection":
    { backgroundColor: "var(--cm-selection)" },
  "&.cm-focused .cm-matchingBracket": {
    backgroundColor: "var(--cm-bracket)",
    outline: "1px solid var(--accent)",
  },
  "&.cm-focused .cm-nonmatchingBracket": { backgroundColor: "var(--bad-bg)" },
  ".cm-tooltip": { backgroundColor: "var(--card)", color: "var(--fg)", border: "1px solid var(--border)" },
  ".cm-panels": { backgroundColor: "var(--card)", color: "var(--fg)" },
});

const highlight = HighlightStyle.define([
  { tag: [t.keyword, t.controlKeyword, t.operatorKeyword, t.definitionKeyword, t.moduleKeyword], color: "var(--syn-keyword)", fontWeight: "600" },
  { tag: [t.string, t.special(t.string)], color: "var(--syn-string)" },
  { tag: [t.comment, t.lineComment], color: "var(--syn-comment)", fontStyle: "italic" },
  { tag: [t.number, t.bool, t.null], color: "var(--syn-number)" },
  { tag: [t.function(t.definition(t.variableName)), t.definition(t.className)], color: "var(--syn-def)", fontWeight: "600" },
  { tag: [t.function(t.variableName), t.function(t.propertyName)], color: "var(--syn-call)" },
  { tag: [t.className, t.standard(t.variableName), t.self], color: "var(--syn-builtin)" },
  { tag: [t.operator, t.punctuation, t.bracket], color: "var(--syn-punct)" },
  { tag: t.invalid, color: "var(--bad)" },
]);

function storage() {
  try {
    return window.localStorage;
  } catch {
    return null; // private modes may refuse storage; the editor still works without drafts
  }
}

function mount(textarea) {
  const store = storage();
  const key = textarea.dataset.draftKey;
  const adopt = textarea.dataset.draftAdopt;
  const starter = textarea.dataset.starter ?? textarea.value;
  let saved = key && store ? store.getItem(key) : null;
  if (saved === null && adopt && store) {
    saved = store.getItem(adopt);
    if (saved !== null) {
      try {
        store.setItem(key, saved);
        store.removeItem(adopt);
      } catch {
        /* storage refused: the anonymous draft stays where it was */
      }
    }
  }
  const status = document.getElementById(textarea.dataset.draftStatus || "");
  const restored = saved !== null && saved !== starter;
  const label = textarea.labels && textarea.labels[0];

  let timer = null;
  const save = () => {
    clearTimeout(timer);
    timer = null;
    if (!key || !store) return;
    const text = textarea.value;
    try {
      if (text === starter) store.removeItem(key);
      else store.setItem(key, text);
    } catch {
      /* storage full or refused: the draft lives as long as the page */
    }
  };
  const keep = (text) => {
    textarea.value = text;
    clearTimeout(timer);
    timer = setTimeout(save, 250);
  };
  // Leaving the page (to sign in, say) must not lose the last keystrokes to the debounce.
  window.addEventListener("pagehide", () => timer && save());
  if (textarea.form) textarea.form.addEventListener("submit", () => timer && save());

  // Mod-Enter runs the examples, Mod-Shift-Enter submits (the buttons carry the mode).
  const press = (selector) => () => {
    const form = textarea.form;
    if (!form) return false;
    const button = form.querySelector(selector);
    if (button) form.requestSubmit(button);
    else form.requestSubmit();
    return true;
  };

  const view = new EditorView({
    parent: textarea.parentNode,
    state: EditorState.create({
      doc: restored ? saved : textarea.value,
      extensions: [
        Prec.highest(
          keymap.of([
            { key: "Mod-Enter", run: press("#run-examples") },
            { key: "Mod-Shift-Enter", run: press("#submit-code") },
          ]),
        ),
        EditorView.lineWrapping,
        basicSetup,
        keymap.of([indentWithTab]),
        python(),
        indentUnit.of("    "),
        EditorState.tabSize.of(4),
        theme,
        syntaxHighlighting(highlight),
        // tabindex: the editing area is already reachable by Tab (contenteditable), but saying so
        // lets checkers (axe's scrollable-region-focusable) see that its scroller is reachable.
        EditorView.contentAttributes.of({
          tabindex: "0",
          "aria-label": label ? label.textContent.trim() : "Code editor",
          "aria-describedby": textarea.getAttribute("aria-describedby") || "",
        }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) keep(update.state.doc.toString());
        }),
      ],
    }),
  });
  textarea.parentNode.insertBefore(view.dom, textarea);
  textarea.hidden = true;
  textarea.value = view.state.doc.toString();
  if (label) label.addEventListener("click", () => view.focus());

  const setCode = (text, message) => {
    view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
    if (status && message) status.textContent = message;
    view.focus();
  };
  if (status && restored) status.textContent = "Your draft was restored.";
  textarea.editor = { view, setCode, starter };
  return textarea.editor;
}

function editorFor(selector) {
  const textarea = document.querySelector(selector || "textarea[data-editor]");
  return textarea && textarea.editor;
}

document.addEventListener("click", (event) => {
  const reset = event.target.closest("[data-editor-reset]");
  if (reset) {
    const editor = editorFor(reset.dataset.editorReset);
    const changed = editor && editor.view.state.doc.toString() !== editor.starter;
    if (editor && (!changed || window.confirm("Replace your code with the starter code? Your draft will be lost."))) {
      editor.setCode(editor.starter, "Back to the starter code.");
    }
    return;
  }
  const load = event.target.closest("[data-editor-load]");
  if (load) {
    const editor = editorFor();
    const source = document.querySelector(load.dataset.editorLoad);
    if (editor && source) editor.setCode(source.textContent, "Loaded that submission into the editor.");
  }
});

function mountAll() {
  document.querySelectorAll("textarea[data-editor]").forEach((textarea) => {
    if (!textarea.editor) mount(textarea);
  });
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
else mountAll();

window.quizbankEditor = { mount, mountAll, editorFor };
