// Formulas in prompts, answers and hints: the server's Markdown marks them as
// <span class="math inline"> and <div class="math block"> holding TeX; KaTeX draws them here,
// on load and after every htmx swap (a revealed answer or hint).
(function () {
  function render(root) {
    if (!window.katex) return;
    root.querySelectorAll(".math.inline, .math.block").forEach((el) => {
      if (el.dataset.rendered) return;
      window.katex.render(el.textContent, el, {
        displayMode: el.classList.contains("block"),
        throwOnError: false,
      });
      el.dataset.rendered = "1";
    });
  }
  document.addEventListener("DOMContentLoaded", () => render(document));
  document.addEventListener("htmx:afterSwap", (event) => render(event.detail.target || document));
})();
