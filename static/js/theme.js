// Loaded synchronously in <head> so the saved theme applies before the first paint (no flash).
// A file, not an inline script, so the Content-Security-Policy can forbid inline scripts.
try {
  const t = localStorage.getItem("quizbank:theme");
  if (t === "light" || t === "dark") document.documentElement.dataset.theme = t;
} catch (e) {}
