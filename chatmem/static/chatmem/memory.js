// The Memory screen's small enhancements. Everything works without this file
// (every action is a plain form POST); with it, setting switches save on flip.
(function () {
  "use strict";
  document.documentElement.classList.add("cm-js");

  function say(form, text, failed) {
    var status = form.querySelector(".cm-status");
    if (!status) return;
    status.textContent = text;
    status.classList.toggle("cm-status-error", !!failed);
  }

  function saveSetting(form, box) {
    var name = form.querySelector("input[name=name]").value;
    var token = form.querySelector("input[name=csrf_token]").value;
    box.disabled = true;
    say(form, "Saving…", false);
    fetch(form.action, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "X-CSRFToken": token
      },
      body: JSON.stringify({ name: name, value: box.checked })
    })
      .then(function (response) {
        return response.json().catch(function () { return {}; }).then(function (body) {
          if (!response.ok || !body.ok) {
            var error = (body && body.error && body.error.message) || ("The server answered " + response.status + ".");
            throw new Error(error);
          }
          return body;
        });
      })
      .then(function (body) {
        say(form, "Saved", false);
        if (name === "memory_enabled") {
          document.querySelectorAll("[data-memory-off]").forEach(function (notice) {
            notice.hidden = !!body.value;
          });
          document.querySelectorAll("[data-memory-on]").forEach(function (part) {
            part.hidden = !body.value;
          });
        }
      })
      .catch(function (error) {
        box.checked = !box.checked;
        say(form, "Not saved: " + (error && error.message ? error.message : "the network failed."), true);
      })
      .finally(function () { box.disabled = false; });
  }

  function showGuardrailFields(container) {
    var select = container.querySelector("[data-type-select]");
    if (!select) return;
    var isGuardrail = select.value === "guardrail";
    container.querySelectorAll("[data-guardrail-only]").forEach(function (field) {
      field.hidden = !isGuardrail;
      field.querySelectorAll("input, select").forEach(function (input) { input.disabled = !isGuardrail; });
    });
  }

  // Beside a block (or ask) guardrail's target in the add and edit forms: what it
  // would have refused lately (the screen's read-only dry-run route).
  function watchDryRun(container) {
    var url = container.getAttribute("data-dry-run");
    var result = container.querySelector("[data-dry-run-result]");
    var target = container.querySelector("input[name=target]");
    if (!url || !result || !target) return;
    var timer = null;
    var asked = 0;
    function check() {
      var type = container.querySelector("[data-type-select]");
      var severity = container.querySelector("select[name=severity]");
      var value = target.value.trim();
      if (!value || (type && type.value !== "guardrail") || (severity && severity.value !== "block" && severity.value !== "ask")) {
        result.textContent = "";
        return;
      }
      var mine = ++asked;
      var asking = severity && severity.value === "ask" ? "&severity=ask" : "";
      fetch(url + "?target=" + encodeURIComponent(value) + asking, {
        credentials: "same-origin",
        headers: { "Accept": "application/json" }
      })
        .then(function (response) { return response.json(); })
        .then(function (body) {
          if (mine !== asked) return;  // a later keystroke asked again
          result.textContent = body.summary ? "Dry run: " + body.summary
            : (body.error && body.error.message) || "";
        })
        .catch(function () { if (mine === asked) result.textContent = ""; });
    }
    function soon() { clearTimeout(timer); timer = setTimeout(check, 300); }
    container.querySelectorAll("input[name=target], select[name=severity], [data-type-select]").forEach(function (field) {
      field.addEventListener(field.tagName === "INPUT" ? "input" : "change", soon);
    });
    check();
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-setting]").forEach(function (form) {
      var box = form.querySelector("input[type=checkbox][name=value]");
      if (!box) return;
      box.addEventListener("change", function () { saveSetting(form, box); });
      form.addEventListener("submit", function (event) { event.preventDefault(); saveSetting(form, box); });
    });
    document.querySelectorAll("[data-type-fields]").forEach(function (container) {
      showGuardrailFields(container);
      var select = container.querySelector("[data-type-select]");
      if (select) select.addEventListener("change", function () { showGuardrailFields(container); });
      watchDryRun(container);
    });
    // Rejecting is not undone from here: ask first (without JS the form posts as is).
    document.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
      });
    });
    document.querySelectorAll("form[data-confirm-reject]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        var rejecting = event.submitter && event.submitter.value === "reject";
        if (rejecting && !window.confirm(form.getAttribute("data-confirm-reject"))) event.preventDefault();
      });
    });
    document.querySelectorAll("[data-select-all]").forEach(function (all) {
      all.addEventListener("change", function () {
        document.querySelectorAll("input.cm-select").forEach(function (box) { box.checked = all.checked; });
      });
    });
  });
})();
