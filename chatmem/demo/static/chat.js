// The chat page: renders messages and tool cards, and talks to the chat JSON API
// (the same routes a script uses), sending the CSRF token as X-CSRFToken.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("chat-data").textContent);
  const token = document.querySelector('meta[name="csrf-token"]').content;
  const list = document.getElementById("messages");
  const api = "/chat/api/conversations";

  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": token },
      body: JSON.stringify(body || {}),
    });
    const payload = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = (payload && payload.error) || {};
      throw new Error(error.message || "Request failed (" + response.status + ").");
    }
    return payload;
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  async function get(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } });
    const payload = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(((payload && payload.error) || {}).message || "Request failed.");
    return payload;
  }

  // A call an `ask` guardrail held: it waits for a curator. The card asks
  // where the request stands every few seconds; once it is allowed, Run now
  // runs the same call through the chat API (the same dispatch path).
  const STATE_WORDS = {
    waiting: "A curator has not decided yet.",
    allowed: "Allowed once: run it now.",
    denied: "Denied by a curator.",
    expired: "The approval expired unused.",
    used: "Already run.",
    cancelled: "Withdrawn: the caller stopped waiting (its MCP task was cancelled).",
  };
  // Once decided, the card's heading, badge and colour say so: a run call no
  // longer reads "Waiting for approval" under an amber approval_required.
  const STATE_CARDS = {
    waiting: ["Waiting for approval", "approval_required", "held"],
    allowed: ["Allowed once", "allowed", "ok"],
    used: ["Allowed and run", "allowed_and_run", "ok"],
    denied: ["Denied", "denied", "blocked"],
    expired: ["Expired", "expired", "error"],
    cancelled: ["Withdrawn", "cancelled", "error"],
  };

  function heldPanel(message, error, card) {
    const panel = el("div", "tool-held");
    const heading = el("strong", "tool-held-heading", STATE_CARDS.waiting[0]);
    panel.append(heading);
    const rule = error.guidance_id ? "guardrail #" + error.guidance_id + ": " + (error.title || "") : "a guardrail";
    panel.append(document.createTextNode(" — request #" + error.request_id + ", held by " + rule));
    const status = el("p", "tool-held-state", STATE_WORDS.waiting);
    status.setAttribute("role", "status");
    status.dataset.state = "waiting";
    const run = el("button", "run-now", "Run now");
    run.type = "button";
    run.hidden = true;
    panel.append(status, run);
    if (!data.conversation) return panel;
    const base = api + "/" + data.conversation.id + "/held/" + message.id;
    let timer = null;
    function show(state, note) {
      status.dataset.state = state;
      const [words, badge, look] = STATE_CARDS[state] || STATE_CARDS.waiting;
      heading.textContent = words;
      card.querySelector(".tool-badge").textContent = badge;
      card.className = "tool-card tool-card--" + look;
      card.dataset.heldState = state;
      status.textContent = (STATE_WORDS[state] || state) + (note ? " Note: " + note : "");
      run.hidden = state !== "allowed";
      if (state !== "waiting" && timer) { clearInterval(timer); timer = null; }
    }
    async function check() {
      try {
        const answer = await get(base);
        show(answer.state, answer.note);
      } catch (error) { /* a network hiccup: ask again next time */ }
    }
    run.addEventListener("click", async () => {
      run.disabled = true;
      try {
        const reply = await post(base + "/run");
        show("used");
        append(reply.messages);
      } catch (error) {
        run.disabled = false;
        showError(error.message);
        check();
      }
    });
    check();
    timer = setInterval(check, 3000);
    return panel;
  }

  function json(value) {
    return JSON.stringify(value, null, 2);
  }

  function toolCard(message) {
    const outcome = message.outcome || "ok";
    const error = (message.result && message.result.error) || null;
    const card = el("li", "tool-card tool-card--" + outcome);
    card.dataset.outcome = outcome;
    const head = el("div", "tool-head");
    head.append(el("span", "tool-label", "Tool call"), el("code", "tool-name", message.name));
    const badge = outcome === "blocked" ? "blocked_by_memory" : outcome === "held" ? "approval_required" : outcome === "error" ? error && error.code : "ok";
    head.append(el("span", "tool-badge", badge || outcome));
    card.append(head);
    if (outcome === "blocked" && error) {
      const banner = el("p", "tool-blocked");
      banner.append(el("strong", "", "Refused by project memory"));
      const rule = error.guidance_id ? "guardrail #" + error.guidance_id + ": " : "guardrail: ";
      banner.append(document.createTextNode(" — " + rule + (error.title || "")));
      card.append(banner);
    } else if (outcome === "held" && error) {
      card.append(heldPanel(message, error, card));
    } else if (error) {
      card.append(el("p", "tool-error", error.message || "The call failed."));
    }
    const args = el("div", "tool-section");
    args.append(el("h3", "", "Arguments"), el("pre", "", json(message.arguments)));
    const result = el("details", "tool-section");
    result.open = outcome !== "ok" || json(message.result).length < 160;  // failures stay open
    result.append(el("summary", "", "Result"), el("pre", "", json(message.result)));
    card.append(args, result);
    return card;
  }

  function render(message) {
    if (message.role === "tool") return toolCard(message);
    if (message.role === "assistant" && !message.content) return null;  // only tool calls
    const item = el("li", "message message--" + message.role);
    const who = { user: "You", assistant: "Assistant", notice: "chatmem demo" }[message.role];
    item.append(el("span", "who", who), message.role === "notice" ? noticeText(message.content) : el("div", "text", message.content));
    return item;
  }

  // A notice written in sections (/help): "## " lines are headings, "- " lines
  // list items, blank lines end a section. Text only, never markup.
  function noticeText(content) {
    const box = el("div", "text");
    if (!content || !content.startsWith("## ")) {
      box.textContent = content || "";
      return box;
    }
    box.classList.add("text--sections");
    let list = null;
    for (const line of content.split("\n")) {
      if (line.startsWith("- ")) {
        if (!list) list = box.appendChild(el("ul", "notice-list"));
        list.append(el("li", "", line.slice(2)));
        continue;
      }
      list = null;
      if (line.startsWith("## ")) box.append(el("h2", "notice-heading", line.slice(3)));
      else if (line.trim()) box.append(el("p", "", line));
    }
    return box;
  }

  function append(messages) {
    for (const message of messages) {
      const node = render(message);
      if (node) list.append(node);
    }
    list.lastElementChild && list.lastElementChild.scrollIntoView({ block: "end" });
  }

  function showError(text) {
    const item = el("li", "message message--error", text);
    item.setAttribute("role", "alert");
    list.append(item);
  }

  if (list) append(data.messages);

  const form = document.getElementById("composer");
  if (form) {
    const box = form.elements.content;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const content = box.value.trim();
      if (!content) return;
      const button = form.querySelector("button");
      button.disabled = box.disabled = true;
      form.classList.add("busy");
      try {
        const reply = await post(api + "/" + data.conversation.id + "/messages", { content });
        box.value = "";
        append(reply.messages);
        // The title the server gave the conversation, on the page and in the sidebar.
        const title = reply.conversation && reply.conversation.title;
        if (title) {
          const heading = document.querySelector(".conversation-head h1");
          const listed = document.querySelector(".conversation-list a[aria-current] .title");
          if (heading) heading.textContent = title;
          if (listed) listed.textContent = title;
          document.title = title + " · chatmem demo";
        }
      } catch (error) {
        showError(error.message);
      } finally {
        button.disabled = box.disabled = false;
        form.classList.remove("busy");
        box.focus();
      }
    });
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
  }

  const create = document.getElementById("new-conversation");
  create.addEventListener("click", async () => {
    try {
      const conversation = await post(api);
      window.location.assign("/chat/" + conversation.id);
    } catch (error) {
      alert(error.message);
    }
  });

  const close = document.getElementById("close-conversation");
  if (close) {
    close.addEventListener("click", async () => {
      if (!window.confirm(close.dataset.confirm)) return;
      close.disabled = true;
      try {
        await post(api + "/" + data.conversation.id + "/close");
        window.location.reload();
      } catch (error) {
        close.disabled = false;
        showError(error.message);
      }
    });
  }
})();
