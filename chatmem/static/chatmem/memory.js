// The Memory screen's small enhancements. Everything works without this file
// (every action is a plain form POST); with it, setting switches save on flip
// and Pending review can be worked from the keyboard.
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

  // Keyboard review on Pending review: j/k move between proposals, a approves,
  // Shift+a approves anyway, r goes to the reject reason, e opens the edit
  // form, ? lists the keys. A key only clicks the card's own button or focuses
  // its own field: each action is the very form POST a mouse click makes
  // (CSRF, capability, version check and the reject confirmation included).
  var RESUME = "chatmem-review-resume";

  function typingIn(element) {
    var tag = element && element.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || !!(element && element.isContentEditable);
  }

  function reviewKeys(list) {
    var help = document.getElementById("cm-review-keys");
    var toggle = document.querySelector("[data-review-keys-toggle]");
    var status = document.querySelector("[data-review-status]");
    var byKeyboard = false;

    // The cards of every lane, in page order (Pending draws one list per lane).
    function cards() { return Array.prototype.slice.call(list.querySelectorAll("li.cm-row[tabindex]")); }
    function current() {
      var card = document.activeElement && document.activeElement.closest("li.cm-row[tabindex]");
      return card && list.contains(card) ? card : null;
    }
    function say(text) { if (status) status.textContent = text; }
    function focusCard(card) {
      say("");
      if (card) card.focus();
    }
    function move(step) {
      var all = cards();
      var at = all.indexOf(current());
      focusCard(all[at < 0 ? 0 : Math.min(Math.max(at + step, 0), all.length - 1)]);
    }
    function helpOpen() { return !!help && !help.hidden; }
    function showHelp(open) {
      if (!help) return;
      help.hidden = !open;
      if (toggle) toggle.setAttribute("aria-expanded", String(open));
    }
    function approve(card, anyway) {
      // Shift+a is the deliberate key: it approves a flagged proposal anyway, and a clean one plainly.
      var button = (anyway && card.querySelector('[data-review-key="A"]')) || card.querySelector('[data-review-key="a"]');
      if (button) button.click();
      else say(card.getAttribute("aria-label") + ": read its flags, then press Shift+A to approve it anyway.");
    }
    function reject(card) {
      var reason = card.querySelector(".cm-row-foot .cm-reject input[name=reason]");
      if (reason) reason.focus();
    }
    function edit(card) {
      var details = card.querySelector(".cm-row-foot details.cm-edit");
      if (!details) return;
      details.open = true;
      var field = details.querySelector("textarea[name=text]");
      if (field) field.focus();
    }

    if (toggle) {
      toggle.hidden = false;
      toggle.addEventListener("click", function () { showHelp(!helpOpen()); });
    }

    document.addEventListener("keydown", function (event) {
      byKeyboard = true;
      if (event.defaultPrevented || event.ctrlKey || event.altKey || event.metaKey || event.isComposing) return;
      var key = event.key || "";  // autofill sends keydown without a key
      if (key === "Escape") {
        // From a card's field back to the card, where the keys work again.
        var from = current();
        if (from && document.activeElement !== from) {
          event.preventDefault();
          focusCard(from);
        } else if (helpOpen()) {
          showHelp(false);
        }
        return;
      }
      if (typingIn(event.target)) return;
      if (key === "?") {
        event.preventDefault();
        showHelp(!helpOpen());
        return;
      }
      var letter = key.length === 1 ? key.toLowerCase() : "";
      if (!letter || "jkare".indexOf(letter) < 0 || (event.shiftKey && letter !== "a")) return;
      // Taken here, so the letter is not also typed into the field the key focuses.
      event.preventDefault();
      if (letter === "j" || letter === "k") {
        move(letter === "j" ? 1 : -1);
        return;
      }
      var card = current();
      if (!card) {
        say("Press j to choose a proposal first.");
      } else if (!event.repeat) {  // a held key must not post twice
        if (letter === "a") approve(card, event.shiftKey);
        else if (letter === "r") reject(card);
        else edit(card);
      }
    });
    document.addEventListener("pointerdown", function () { byKeyboard = false; }, true);

    // After an action made from the keyboard, the page comes back with the next
    // proposal at the same place focused, so a run of decisions needs no mouse.
    list.addEventListener("submit", function (event) {
      if (event.defaultPrevented || !byKeyboard) return;  // a cancelled confirmation, or a click
      var at = cards().indexOf(event.target.closest("li.cm-row"));
      try { sessionStorage.setItem(RESUME, String(at)); } catch (ignored) { /* storage off */ }
    });
    var resume = null;
    try {
      resume = sessionStorage.getItem(RESUME);
      sessionStorage.removeItem(RESUME);
    } catch (ignored) { /* storage off */ }
    var all = cards();
    if (resume !== null && all.length && document.querySelector(".cm-flashes")) {
      all[Math.min(Math.max(Number(resume) || 0, 0), all.length - 1)].focus();
    }
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
    document.querySelectorAll("[data-review-keys]").forEach(reviewKeys);
    document.querySelectorAll("[data-select-all]").forEach(function (all) {
      all.addEventListener("change", function () {
        document.querySelectorAll("input.cm-select").forEach(function (box) { box.checked = all.checked; });
      });
    });
  });
})();
