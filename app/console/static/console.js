// Elephant console: small progressive enhancements. Every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // <input data-autosubmit>: submit its form when the value changes (sliders, selects).
  for (const input of document.querySelectorAll("[data-autosubmit]")) {
    input.addEventListener("change", () => input.form && input.form.requestSubmit());
  }
  // <input type=range data-output="id">: show the value while it moves.
  for (const input of document.querySelectorAll("input[data-output]")) {
    const out = document.getElementById(input.dataset.output);
    if (!out) continue;
    const labels = input.dataset.labels ? JSON.parse(input.dataset.labels) : null;
    const show = () => { out.textContent = labels ? labels[Number(input.value)] : input.value; };
    input.addEventListener("input", show);
    show();
  }
  // <form data-confirm="question">: ask before a destructive submit.
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
});
