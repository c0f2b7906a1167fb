// forms.js: a form the server would refuse for its size (over the body cap
// on <body data-max-body>) is not sent; an inline message says so and what
// was typed stays in the form. The server still enforces the cap (413).
(() => {
  "use strict";
  const max = Number(document.body && document.body.dataset.maxBody);
  if (!max) return;
  function sizeText(n) {
    if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MB";
    if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + " KB";
    return n + " bytes";
  }
  document.addEventListener("submit", (e) => {
    const form = e.target;
    if (!(form instanceof HTMLFormElement) || (form.method || "").toLowerCase() !== "post") return;
    // The body is sent URL-encoded: this is its exact length (ASCII).
    const size = new URLSearchParams(new FormData(form, e.submitter || null)).toString().length;
    let msg = form.querySelector(".form-too-large");
    if (size <= max) {
      if (msg) msg.remove();
      return;
    }
    e.preventDefault();
    if (!msg) {
      msg = document.createElement("p");
      msg.className = "error form-too-large";
      msg.setAttribute("role", "alert");
      form.prepend(msg);
    }
    msg.textContent = "Not sent: this form is " + sizeText(size) + " and the Studio accepts at most " +
      sizeText(max) + " per request. Shorten it; what you typed is still here.";
  }, true);
})();
