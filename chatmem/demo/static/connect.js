// The Connect page's copy buttons: a token or a client configuration, as shown.
"use strict";

async function copyText(source) {
  const text = source.textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (a page served over plain http to another host):
    // select the text and use the older command.
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    document.execCommand("copy");
  }
}

document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source) return;
  await copyText(source);
  const label = button.dataset.label || button.textContent;
  button.dataset.label = label;
  button.textContent = "Copied";
  const status = document.getElementById("copy-status");
  if (status) status.textContent = "Copied to the clipboard.";
  setTimeout(() => { button.textContent = label; }, 2000);
});
