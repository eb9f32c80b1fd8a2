"use strict";
// The inbox page: the open questions of GET /interactions, answered with POST .../interactions/{id}.
// Plain JavaScript, no build step and nothing fetched from elsewhere. In JWT mode the person signs in
// with the OpenID Connect authorization-code flow with PKCE; the token is kept in memory only.

const config = JSON.parse(document.getElementById("config").textContent);
const base = location.origin + location.pathname.replace(/\/inbox\/?$/, "");
const params = new URLSearchParams(location.search);
// ?refresh=N: every N seconds, 1 to 300 (0 or less: load once, then on Refresh); anything else: 3.
const refreshSeconds = (() => {
  const asked = params.has("refresh") ? Number(params.get("refresh")) : 3;
  if (!Number.isFinite(asked)) return 3;
  return asked <= 0 ? 0 : Math.min(300, Math.max(1, asked));
})();
const $ = (id) => document.getElementById(id);
const cards = new Map(); // requestId -> {element, item}
let token = null;
let refreshes = 0;
let timer = null;
let stopped = false;
let lastRefresh = null;
let more = false;
let generation = 0;
const answered = new Set(); // answered here: never shown again, whatever a stale list says

// ---- calling the API ----

async function call(method, path, body) {
  const headers = { accept: "application/json", "x-resumable-via": "page" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (token) headers.authorization = "Bearer " + token;
  let reply;
  try {
    reply = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    return { status: 0, data: { message: "could not reach the API (" + error.message + "); nothing was done" } };
  }
  let data = null;
  try { data = await reply.json(); } catch (_) { data = null; }
  return { status: reply.status, data };
}

const part = (value) => encodeURIComponent(value);
const interactionPath = (item) =>
  "/sessions/" + part(item.sessionId) + "/turns/" + part(item.turnId) + "/interactions/" + part(item.requestId);
const turnPath = (item) => "/sessions/" + part(item.sessionId) + "/turns/" + part(item.turnId);

function message(reply) {
  return (reply.data && (reply.data.message || reply.data.Message)) || "the API answered " + reply.status;
}

// ---- notices: IAM mode, sign-in problems, the API unreachable ----

function notice(html, bad) {
  const box = $("notice");
  box.innerHTML = html;
  box.classList.toggle("bad", Boolean(bad));
  box.hidden = !html;
}

function refused(reply) {
  // 401: the token is missing, expired, or for another audience; 403 on an IAM API: a browser cannot sign.
  if (reply.status === 401 && config.authMode === "JWT") {
    token = null;
    $("who").hidden = true;
    notice("Your sign-in has expired or is not accepted by this API (401: " + escapeHtml(message(reply)) +
      "). Nothing was done. Sign in again to go on.", true);
    showSignIn();
    return true;
  }
  if ((reply.status === 401 || reply.status === 403) && config.authMode !== "JWT") {
    notice("This API uses IAM authorization (<code>AuthMode=IAM</code>), which a browser cannot sign, so this page " +
      "cannot read the inbox. Answer from a terminal with <code>resumable inbox</code> and " +
      "<code>resumable approve</code>, or deploy the stack with <code>AuthMode=JWT</code>, <code>JwtIssuer</code> " +
      "and <code>JwtAudience</code> to sign in here.", true);
    stop();
    return true;
  }
  return false;
}

// ---- the list ----

async function refresh() {
  if (stopped || (config.authMode === "JWT" && !token)) return;
  const asked = generation; // an answer or a sign-out since the request makes its reply stale
  const reply = await call("GET", "/interactions?status=requested&limit=200");
  // A page leaves out what this reader may not answer (an approval rule's), so it can come back short
  // with a cursor: read on, a few pages at most, to show the most urgent 200 that are theirs.
  for (let pages = 1; pages < 5 && reply.status === 200 && reply.data && reply.data.cursor &&
    Array.isArray(reply.data.interactions) && reply.data.interactions.length < 200; pages += 1) {
    const next = await call("GET", "/interactions?status=requested&limit=" + (200 - reply.data.interactions.length) +
      "&cursor=" + encodeURIComponent(reply.data.cursor));
    if (next.status !== 200 || !next.data || !Array.isArray(next.data.interactions)) break;
    reply.data = { interactions: reply.data.interactions.concat(next.data.interactions), cursor: next.data.cursor };
  }
  refreshes += 1;
  document.body.dataset.refreshes = String(refreshes);
  if (asked !== generation) return;
  if (reply.status !== 200 || !reply.data || !Array.isArray(reply.data.interactions)) {
    if (!refused(reply)) $("status").textContent = "Could not load the inbox: " + message(reply) + ". Trying again.";
    return;
  }
  notice(linkNotice);
  const items = reply.data.interactions.filter((item) => item && item.requestId && !answered.has(item.requestId));
  const seen = new Set(items.map((item) => item.requestId));
  for (const [id, card] of cards) {
    if (!seen.has(id) && !card.busy && !card.closed) leftWithoutUs(id);
  }
  let index = 0;
  for (const item of items) {
    let card = cards.get(item.requestId);
    if (!card) {
      card = { element: buildCard(item), item, busy: false, closed: false };
      cards.set(item.requestId, card);
    } else if (!card.busy && !card.closed) {
      card.item = item;
      showApprovals(card.element, item); // others may have approved since
    }
    const list = $("cards");
    if (list.children[index] !== card.element) list.insertBefore(card.element, list.children[index] || null);
    index += 1;
  }
  lastRefresh = new Date();
  more = Boolean(reply.data.cursor);
  showCount();
  tick();
  focusLinked();
  await refreshMine(asked);
  await refreshGrants(asked);
}

// ---- standing grants: what runs without a question, and Revoke ----

async function refreshGrants(asked) {
  const reply = await call("GET", "/grants");
  if (asked !== generation || reply.status !== 200 || !reply.data || !Array.isArray(reply.data.grants)) return;
  const list = $("grant-list");
  const focused = list.contains(document.activeElement) ? document.activeElement.dataset.for : null;
  list.replaceChildren(...reply.data.grants.map(grantItem));
  if (focused) { const again = list.querySelector('[data-for="' + focused + '"]'); if (again) again.focus(); }
  $("grants").hidden = reply.data.grants.length === 0;
}

function grantItem(grant) {
  const li = document.createElement("li");
  li.className = "mine-item";
  const what = document.createElement("strong");
  what.textContent = plain(grant.tool + (grant.inputs ? " " + JSON.stringify(grant.inputs) : "") + " · " +
    (grant.scope === "session" ? "session " + grant.sessionId : "every session of " + grant.principal));
  const who = document.createElement("div");
  who.className = "waits";
  who.textContent = plain("granted by " + grant.grantedBy + (grant.yours ? " (you)" : "") + " under " + grant.rule +
    ", until " + new Date(grant.expiresAt).toLocaleString());
  li.append(what, who);
  if (grant.mayRevoke) {
    const revoke = document.createElement("button");
    revoke.type = "button";
    revoke.className = "danger";
    revoke.dataset.for = grant.grantId;
    revoke.textContent = "Revoke";
    revoke.setAttribute("aria-label", "Revoke the grant of " + grant.tool);
    revoke.addEventListener("click", async () => {
      revoke.disabled = true;
      const reply = await call("DELETE", "/grants/" + encodeURIComponent(grant.grantId));
      if (reply.status !== 200) {
        who.textContent = "Not revoked (" + reply.status + "): " + message(reply);
        revoke.disabled = false;
        return;
      }
      outcome("Revoked: " + grant.tool + " asks again", "its next call waits for a person", false);
      generation += 1;
      refreshGrants(generation);
    });
    li.append(revoke);
  }
  return li;
}

// ---- the questions of the turns the reader started, waiting for others ----

const cancelAsked = new Set(); // the questions whose Cancel the turn was pressed once: the next press cancels

async function refreshMine(asked) {
  const reply = await call("GET", "/interactions?status=requested&started=true&limit=200");
  if (asked !== generation || reply.status !== 200 || !reply.data || !Array.isArray(reply.data.interactions)) return;
  const items = reply.data.interactions.filter((item) => item && item.requestId && !answered.has(item.requestId) &&
    !cards.has(item.requestId)); // (one the reader may answer is a card of the inbox already)
  const list = $("mine-list");
  const focused = list.contains(document.activeElement) ? document.activeElement.dataset.for : null;
  list.replaceChildren(...items.map(mineItem));
  if (focused) { const again = list.querySelector('[data-for="' + focused + '"]'); if (again) again.focus(); }
  $("mine").hidden = items.length === 0;
}

function waitingFor(item) {
  const rule = item.rule;
  if (!rule) return "waiting for an approver";
  const from = rule.approvers && rule.approvers.length ? rule.approvers.join(", ") : "any approver";
  const given = (item.approvals || []).map((approval) => approval.by);
  return "waiting for " + rule.required + " approvals from " + from + " (" + given.length + " so far" +
    (given.length ? ": " + given.join(", ") : "") + ")" +
    (rule.selfApproval === false ? "; you started this turn, so yours cannot count" : "");
}

function mineItem(item) {
  const li = document.createElement("li");
  li.className = "mine-item";
  const what = document.createElement("strong");
  what.textContent = plain((item.summary || item.name) + " in session " + item.sessionId);
  const waits = document.createElement("div");
  waits.className = "waits";
  waits.textContent = plain(waitingFor(item));
  const said = document.createElement("div");
  said.className = "output";
  const act = (label, key, run) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.dataset.for = key + ":" + item.requestId;
    button.addEventListener("click", async () => {
      button.disabled = true;
      const reply = await run();
      if (reply.status === 200) {
        answered.add(item.requestId);
        li.remove();
        $("mine").hidden = $("mine-list").children.length === 0;
        outcome((key === "withdraw" ? "Withdrawn: " : "Canceled: ") + (item.summary || item.name) + " in session " +
          item.sessionId, "the turn is " + (reply.data && reply.data.status), false).focus();
      } else {
        button.disabled = false;
        said.textContent = plain((reply.status === -1 ? "" : "Not done: ") + message(reply));
      }
    });
    return button;
  };
  const withdraw = act("Withdraw (deny) " + (item.summary || item.name), "withdraw", () =>
    call("POST", interactionPath(item), { response: { decision: "deny", message: "withdrawn by the one who started the turn" } }));
  // (a cancel cannot be undone: the first press asks, naming the turn; the second cancels. The asking
  // outlives the list's refreshes, which draw it again.)
  const confirming = "Yes, cancel the turn of session " + item.sessionId;
  const cancel = act(cancelAsked.has(item.requestId) ? confirming : "Cancel the turn", "cancel", async () => {
    if (!cancelAsked.has(item.requestId)) {
      cancelAsked.add(item.requestId);
      cancel.textContent = confirming;
      return { status: -1, data: { message: "press again to cancel the turn: it cannot be undone" } };
    }
    return call("POST", turnPath(item) + "/cancel");
  });
  li.append(what, waits, withdraw, cancel, said);
  return li;
}

// A link to one question (/inbox#q-<requestId>, what the e-mail sends) lands on its card, focused,
// once the list is read; a question no longer waiting for the reader is said so. Opening it decides nothing.
// The list is read from an index, which shows a question a moment after it is asked: one it does not
// hold is looked for again, a second apart, for 3 s (whether the page polls or not) before the page
// says it is not waiting; that notice stays through the page's refreshes.
let linked = /^#q-[A-Za-z0-9_-]+$/.test(location.hash) ? location.hash.slice(1) : null;
const LINK_PATIENCE_MS = 3000;
let linkUntil = null;
let linkTimer = null;
let linkNotice = "";
function focusLinked() {
  if (!linked) return;
  const target = document.getElementById(linked);
  const wanted = linked.slice(2);
  if (!target) {
    if (linkUntil === null) linkUntil = Date.now() + LINK_PATIENCE_MS;
    if (Date.now() < linkUntil) {
      if (linkTimer === null) linkTimer = setTimeout(() => { linkTimer = null; refresh(); }, 1000);
      return;
    }
  }
  linked = null;
  if (!target) {
    linkNotice = "The question in your link (" + escapeHtml(wanted) + ") is not waiting for you: it was answered, " +
      "canceled or expired, or it is not yours to answer. The others waiting for you are below.";
    notice(linkNotice, false);
    return;
  }
  target.classList.add("linked");
  const article = target.querySelector("article");
  article.tabIndex = -1;
  article.scrollIntoView({ block: "center" });
  article.focus();
}

function leftWithoutUs(id) {
  // Answered elsewhere, canceled or expired. Someone typing in it keeps the text, with nothing to send.
  const card = cards.get(id);
  const title = toolOf(card.item).title;
  outcome(title + " in session " + card.item.sessionId + " is no longer waiting",
    "it was answered elsewhere, canceled or expired", true);
  const typing = [...card.element.querySelectorAll("form")].some((form) => !form.hidden);
  if (!typing) { removeCard(id); return; }
  card.closed = true;
  card.element.querySelectorAll("button:not(.close)").forEach((button) => { button.disabled = true; });
  const note = card.element.querySelector(".card-error");
  note.textContent = "This question is no longer waiting (answered elsewhere, canceled or expired): nothing can be " +
    "sent. Your text is kept until you close the form.";
  note.hidden = false;
}

function showCount() {
  const count = cards.size;
  $("empty").hidden = count > 0;
  $("status").textContent = (count === 0 ? "No questions are waiting" : count === 1 ? "1 question is waiting" :
    count + " questions are waiting") + (more ? " (the most urgent 200; more wait behind them)" : "") +
    (lastRefresh ? " · refreshed " + lastRefresh.toLocaleTimeString() : "");
}

function schedule() {
  clearTimeout(timer);
  if (refreshSeconds > 0 && !stopped) {
    timer = setTimeout(async () => {
      try { await refresh(); } finally { schedule(); }
    }, refreshSeconds * 1000);
  }
}

function stop() {
  stopped = true;
  clearTimeout(timer);
  $("status").textContent = "The inbox is not loaded.";
}

function removeCard(id) {
  const card = cards.get(id);
  if (!card) return;
  card.element.remove();
  cards.delete(id);
  if (!stopped) showCount();
}

function toolOf(item) {
  const reason = item.reason && typeof item.reason === "object" ? item.reason : null;
  if (item.name === "approval" && reason && typeof reason.tool === "string") {
    return { title: reason.tool, shown: reason.input, note: reason.message || "" };
  }
  return { title: item.name, shown: item.reason, note: "" };
}

function buildCard(item) {
  const element = $("card-template").content.firstElementChild.cloneNode(true);
  const id = "q-" + item.requestId.replace(/[^A-Za-z0-9_-]/g, "_");
  const tool = toolOf(item);
  element.id = id;
  element.dataset.requestId = item.requestId;
  const article = element.querySelector("article");
  const heading = element.querySelector(".tool");
  heading.id = id + "-title";
  heading.textContent = plain(item.summary || tool.title);
  article.setAttribute("aria-labelledby", heading.id);
  showContext(element, item);
  startConversation(element, item);
  for (const agent of item.agentPath || []) {
    const li = document.createElement("li");
    li.textContent = agent;
    element.querySelector(".path ol").append(li);
  }
  const asker = (item.agentPath || []).slice(-1)[0] || "the agent";
  element.querySelector(".reason").textContent = tool.note ||
    (item.name === "approval" ? asker + " wants to run " + tool.title + " with this input:" : asker + " asks (" + item.name + "):");
  const input = element.querySelector(".input");
  input.textContent = plain(JSON.stringify(tool.shown, null, 2));
  input.setAttribute("aria-label", "input of " + tool.title);
  element.querySelector(".request").textContent = item.requestId;
  element.querySelector(".session").textContent = item.sessionId;
  element.querySelector(".turn").textContent = item.turnId;
  if (item.childTurnId) {
    element.querySelector(".child").textContent = item.childTurnId;
    element.querySelector(".child-row").hidden = false;
  }
  const countdown = element.querySelector(".countdown");
  if (item.expiresAt) countdown.dateTime = item.expiresAt;
  showApprovals(element, item);

  offerGrants(element, item, tool);

  const approve = element.querySelector(".approve");
  const confirmBox = element.querySelector(".confirm");
  approve.setAttribute("aria-label", "Approve " + tool.title + " in session " + item.sessionId);
  // A destructive question: a second, explicit click that names what will happen, the focus on Cancel.
  let confirming = null; // the approval the Yes button sends, and where its refusal shows
  const confirmFirst = (what, response, errorPlace) => {
    confirming = { response, errorPlace };
    const granting = element.querySelector(".grant").value ? JSON.parse(element.querySelector(".grant").value) : null;
    confirmBox.querySelector(".confirm-text").textContent = "Approving runs " + what +
      (item.impact ? ": " + item.impact : "") + ". It cannot be taken back." + (granting ? " It also lets " +
      tool.title + " run without a question " + (granting.scope === "session" ? "in this session" :
      "in every session of " + (item.principal || "its principal")) + " for " + lasting(granting.for) +
      ", until revoked." : "");
    confirmBox.querySelector(".confirm-yes").textContent = "Yes, run " + what;
    confirmBox.hidden = false;
    confirmBox.querySelector(".confirm-no").focus();
  };
  approve.addEventListener("click", () => {
    if (!item.confirm) { answer(item, { decision: "approve" }); return; }
    confirmFirst(item.summary || tool.title, { decision: "approve" });
  });
  confirmBox.querySelector(".confirm-yes").addEventListener("click", () => {
    confirmBox.hidden = true;
    if (confirming) answer(item, confirming.response, confirming.errorPlace);
  });
  confirmBox.querySelector(".confirm-no").addEventListener("click", () => { confirmBox.hidden = true; approve.focus(); });
  const dismiss = element.querySelector(".dismiss");
  dismiss.setAttribute("aria-label", "Dismiss " + tool.title + " in session " + item.sessionId + " (hide it from your inbox)");
  dismiss.addEventListener("click", () => dismissCard(item));

  const denyForm = element.querySelector(".deny-form");
  const editForm = element.querySelector(".edit-form");
  const replyForm = element.querySelector(".reply-form");
  const forms = [denyForm, editForm, replyForm];
  let openedBy = approve;
  const opener = (form, button) => () => {
    for (const each of forms) each.hidden = each !== form;
    confirmBox.hidden = true;
    openedBy = button;
    form.querySelector("textarea").focus();
  };
  // Closing a form gives focus back to the button that opened it, never to Approve.
  const closeForms = () => {
    for (const each of forms) each.hidden = true;
    openedBy.focus();
  };
  counted(denyForm, (text) => ({ decision: "deny", message: text.trim() }));
  counted(replyForm, (text) => text);
  counted(editForm, (text) => { try { return { decision: "approve", input: JSON.parse(text) }; } catch (_) { return text; } });
  if (item.name !== "approval") { // a question that asks for information: a reply in words, not approve or deny
    approve.hidden = true;
    element.querySelector(".deny-open").hidden = true;
    const replyOpen = element.querySelector(".reply-open");
    replyOpen.hidden = false;
    replyOpen.setAttribute("aria-label", "Reply to " + tool.title + " in session " + item.sessionId + "…");
    replyOpen.addEventListener("click", opener(replyForm, replyOpen));
  }
  replyForm.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!withinLimit(replyForm)) return;
    answer(item, replyForm.querySelector("textarea").value, replyForm.querySelector(".counter"));
  });
  const denyOpen = element.querySelector(".deny-open");
  denyOpen.setAttribute("aria-label", "Deny " + tool.title + " in session " + item.sessionId + "…");
  denyOpen.addEventListener("click", opener(denyForm, denyOpen));
  denyForm.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!withinLimit(denyForm)) return;
    answer(item, { decision: "deny", message: denyForm.querySelector("textarea").value.trim() });
  });
  const editOpen = element.querySelector(".edit-open");
  if (item.editable) {
    editOpen.hidden = false;
    editForm.querySelector("textarea").value = JSON.stringify(tool.shown, null, 2);
    editOpen.setAttribute("aria-label", "Edit the input of " + tool.title + " in session " + item.sessionId + "…");
    editOpen.addEventListener("click", opener(editForm, editOpen));
  }
  editForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const error = editForm.querySelector(".edit-error");
    let edited;
    const text = editForm.querySelector("textarea").value;
    try {
      edited = JSON.parse(text);
    } catch (problem) {
      error.textContent = "This is not JSON (" + problem.message + "); nothing was sent.";
      error.hidden = false;
      return;
    }
    if (!withinLimit(editForm)) return;
    // First the changes, as a diff of the input asked; then a second click approves exactly that.
    if (editForm.dataset.reviewed !== text) {
      const lines = inputDiff(tool.shown, edited);
      editForm.querySelector(".diff").textContent = lines.length ? lines.join("\n") : "(no change: the input asked)";
      editForm.querySelector(".edit-diff").hidden = false;
      editForm.dataset.reviewed = text;
      editForm.querySelector(".edit-submit").textContent = "Approve " + tool.title + " with these changes";
      error.hidden = true;
      editForm.querySelector(".diff").focus(); // (a second Enter on the button never approves unseen)
      return;
    }
    if (item.confirm) { confirmFirst(tool.title + " " + JSON.stringify(edited), { decision: "approve", input: edited }, error); return; }
    answer(item, { decision: "approve", input: edited }, error);
  });
  editForm.querySelector("textarea").addEventListener("input", () => { // a changed text is reviewed again
    delete editForm.dataset.reviewed;
    editForm.querySelector(".edit-diff").hidden = true;
    editForm.querySelector(".edit-submit").textContent = "Review the changes";
  });
  for (const close of element.querySelectorAll(".close")) {
    close.addEventListener("click", () => {
      if (cards.get(item.requestId)?.closed) { removeCard(item.requestId); return; }
      closeForms();
    });
  }
  element.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && forms.some((form) => !form.hidden)) closeForms();
    if (event.key === "Escape" && !confirmBox.hidden) { confirmBox.hidden = true; approve.focus(); }
  });
  return element;
}

// Text from a question shown as it is: control and format characters (a right-to-left override that
// would reorder what follows, an escape) are shown as \u escapes, never obeyed.
const plain = (text) => String(text).replace(/[\p{Cc}\p{Cf}]/gu, (c) => c === "\n" || c === "\t" ? c :
  "\\u" + c.codePointAt(0).toString(16).padStart(4, "0"));

// What a person needs to judge the question: its risk and what it touches, who it is for, the prompt
// that started it, and the agent's own reason.
function showContext(element, item) {
  const risk = element.querySelector(".risk");
  if (item.risk) {
    risk.textContent = item.risk;
    risk.className = "risk risk-" + item.risk;
    risk.hidden = false;
  }
  const impact = element.querySelector(".impact");
  impact.textContent = plain(item.impact || "");
  impact.hidden = !item.impact;
  // Who signed in first; the name their token gives after, as theirs (a person may set their own name).
  const who = item.startedByName && item.startedBy && item.startedByName !== item.startedBy
    ? item.startedBy + " (who gives their name as \u201c" + item.startedByName + "\u201d)"
    : item.startedBy || item.startedByName;
  if (who) {
    element.querySelector(".for").textContent = plain(who);
    element.querySelector(".for-row").hidden = false;
  }
  if (item.rootPrompt) {
    const shown = element.querySelector(".prompt");
    const more = element.querySelector(".more");
    const whole = plain(item.rootPrompt);
    const short = whole.length > 160 ? whole.slice(0, 160) + "…" : whole;
    shown.textContent = short;
    if (short !== item.rootPrompt) {
      more.hidden = false;
      more.setAttribute("aria-expanded", "false");
      more.addEventListener("click", () => {
        const open = more.getAttribute("aria-expanded") !== "true";
        shown.textContent = open ? whole : short;
        more.textContent = open ? "less" : "more";
        more.setAttribute("aria-expanded", String(open));
      });
    }
    element.querySelector(".prompt-row").hidden = false;
  }
  if (item.explanation) {
    element.querySelector(".why").textContent = plain(item.explanation);
    element.querySelector(".why-row").hidden = false;
  }
}

// The turn's messages so far, read when the person opens them, the latest first loaded; older on demand.
function startConversation(element, item) {
  const box = element.querySelector(".conversation");
  const list = box.querySelector(".messages");
  const earlier = box.querySelector(".earlier");
  const status = box.querySelector(".conversation-status");
  const turn = item.childTurnId || item.turnId;
  let before = null;
  let loaded = false;
  const load = async () => {
    earlier.disabled = true;
    status.textContent = "Reading the conversation…";
    const query = "?limit=20" + (before !== null ? "&before=" + before : "");
    const reply = await call("GET", "/sessions/" + part(item.sessionId) + "/turns/" + part(turn) + "/conversation" + query);
    earlier.disabled = false;
    if (reply.status !== 200 || !reply.data || !Array.isArray(reply.data.messages)) {
      status.textContent = "Could not read the conversation: " + message(reply);
      return;
    }
    const page = reply.data;
    list.prepend(...page.messages.map(messageItem));
    before = page.before;
    earlier.hidden = before === null;
    status.textContent = (page.note ? page.note + ". " : "") + plural(page.total, "message") + " from " + page.agent +
      (page.start > 0 ? "; the latest " + (page.total - page.start) + " are shown" : "") + ".";
  };
  box.addEventListener("toggle", () => { if (box.open && !loaded) { loaded = true; load(); } });
  earlier.addEventListener("click", load);
}

function messageItem(said) {
  const li = document.createElement("li");
  li.className = said.role === "assistant" ? "assistant" : "user";
  const role = document.createElement("span");
  role.className = "role";
  role.textContent = said.role === "assistant" ? "agent" : "user";
  li.append(role);
  const lines = (said.content || []).map((block) =>
    block.text !== undefined ? block.text :
      block.toolUse ? "calls " + block.toolUse.name + " " + JSON.stringify(block.toolUse.input) :
        block.toolResult ? "result (" + block.toolResult.status + "): " + block.toolResult.content : "");
  li.append(plain(lines.filter(Boolean).join("\n")));
  return li;
}

// The fields an edit changes, removes or adds, as "- name: old" then "+ name: new".
function inputDiff(asked, edited) {
  const before = asked && typeof asked === "object" ? asked : {};
  const after = edited && typeof edited === "object" ? edited : {};
  const lines = [];
  for (const name of [...Object.keys(before), ...Object.keys(after).filter((k) => !(k in before))]) {
    const was = JSON.stringify(before[name]);
    const now = JSON.stringify(after[name]);
    if (was === now) continue;
    if (name in before) lines.push("- " + name + ": " + was);
    if (name in after) lines.push("+ " + name + ": " + now);
  }
  return lines;
}

// The answer's size against the API's limit, shown as it is typed; over it, nothing is sent.
const encoder = new TextEncoder();
function counted(form, responseOf) {
  const area = form.querySelector("textarea");
  const counter = form.querySelector(".counter");
  // The API counts the answer's JSON; the person is shown what they typed against what it leaves them.
  const size = (text) => encoder.encode(JSON.stringify(responseOf(text))).length;
  const update = () => {
    const base = size("");
    const room = (config.maxResponseBytes || 8192) - base;
    const bytes = size(area.value) - base;
    counter.textContent = bytes + " of " + room + " bytes" + (bytes > room ? ": too long, shorten it to send" : "");
    counter.classList.toggle("over", bytes > room);
    form.dataset.over = String(bytes > room);
  };
  area.addEventListener("input", update);
  area.addEventListener("focus", update);
  update();
}

function withinLimit(form) {
  if (form.dataset.over !== "true") return true;
  form.querySelector("textarea").focus();
  return false;
}

// A question under an approval rule: how many must approve, who has, and whether the reader did.
function showApprovals(element, item) {
  const rule = item.rule;
  const line = element.querySelector(".approvals");
  line.hidden = !rule;
  if (!rule) return;
  const given = (item.approvals || []).map((approval) => approval.by);
  const edited = (item.approvals || []).find((approval) => approval.input !== null && approval.input !== undefined);
  line.textContent = given.length + " of " + rule.required + " approvals" +
    (given.length ? " (" + given.join(", ") + ")" : "") +
    (edited ? " with the input " + JSON.stringify(edited.input) + " (approve that one, or deny)" : "") +
    " · rule " + rule.name +
    (item.escalatedAt ? " · escalated to " + (rule.escalateTo || []).join(", ") : "") +
    (item.approvedByYou ? " · you approved: it waits for another approver" : "");
  element.classList.toggle("escalated", Boolean(item.escalatedAt));
  for (const button of element.querySelectorAll(".approve, .edit-open")) button.disabled = Boolean(item.approvedByYou);
}

// ---- answering ----

// A question whose rule allows standing grants: the approval may also let the tool run without a
// question for a while, in this session or in every session of its principal.
const GRANT_TIMES = [[900, "15 minutes"], [3600, "1 hour"], [28800, "8 hours"], [86400, "1 day"], [604800, "7 days"]];

function offerGrants(element, item, tool) {
  const grants = item.name === "approval" && item.rule && item.rule.grants;
  if (!grants || (item.risk === "destructive" && !grants.destructive)) return;
  const select = element.querySelector(".grant");
  select.append(new Option("nothing more: just this call", ""));
  for (const scope of grants.scopes) {
    const where = scope === "session" ? "in this session" : "in every session of " + (item.principal || "its principal");
    for (const [seconds, label] of GRANT_TIMES.filter(([seconds]) => seconds <= grants.max)) {
      select.append(new Option(tool.title + " for " + label + " " + where, JSON.stringify({ scope, for: seconds })));
    }
  }
  select.setAttribute("aria-label", "Also allow " + tool.title + " without a question");
  element.querySelector(".grant-row").hidden = false;
}

function lasting(seconds) {
  const label = GRANT_TIMES.find(([s]) => s === seconds);
  return label ? label[1] : Math.round(seconds / 60) + " minutes";
}

function grantOf(card, response) {
  const select = card.element.querySelector(".grant");
  if (!select || !select.value || typeof response !== "object" || response.decision !== "approve") return null;
  return JSON.parse(select.value);
}

async function answer(item, response, errorPlace) {
  const card = cards.get(item.requestId);
  if (!card || card.busy) return;
  const grant = grantOf(card, response);
  card.busy = true;
  const buttons = card.element.querySelectorAll("button");
  buttons.forEach((button) => { button.disabled = true; });
  const place = errorPlace || card.element.querySelector(".card-error");
  place.hidden = true;
  generation += 1;
  const reply = await call("POST", interactionPath(item), grant ? { response, grant } : { response });
  generation += 1;
  card.busy = false;
  buttons.forEach((button) => { button.disabled = false; });
  const title = toolOf(item).title;
  const asked = reply.status === 200 ? (reply.data.interactions || []).find((i) => i.requestId === item.requestId) : null;
  if (asked && asked.status === "requested") {
    // An approval under a rule that needs more: counted, and the question waits for other approvers.
    card.item = Object.assign({}, item, asked, { approvedByYou: true });
    showApprovals(card.element, card.item);
    outcome("Approved: " + title + " in session " + item.sessionId, "your approval is " + asked.approvals.length +
      " of " + asked.rule.required + "; the question waits for another approver", false);
    return;
  }
  if (reply.status === 409 && reply.data && reply.data.code === "conflict") {
    const now = await recorded(item);
    if (now && now.status === "requested") { // a vote refused (approved already, or another input): still open
      place.textContent = "Not recorded (409): " + message(reply);
      place.hidden = false;
      return;
    }
  }
  if (reply.status === 403 && reply.data && reply.data.code === "forbidden") { // the question's approval rule
    place.textContent = (grant ? "Not recorded (403): " : "Not yours to answer (403): ") + message(reply);
    place.hidden = false;
    return;
  }
  if ([200, 409, 410].includes(reply.status)) answered.add(item.requestId);
  if (reply.status === 200) {
    const turn = reply.data;
    const verb = typeof response === "string" ? "Replied" : response.decision === "deny" ? "Denied" :
      response.input ? "Approved with your edit" : "Approved";
    const done = outcome(verb + ": " + title + " in session " + item.sessionId, "the turn is " + turn.status +
      (turn.output ? ": " + turn.output : turn.error ? ": " + turn.error : "") +
      (grant ? "; " + title + " now runs without a question " + (grant.scope === "session" ? "in this session" :
        "in every session of its principal") + " for " + lasting(grant.for) + " (Standing grants: Revoke)" : ""), false);
    if (grant) refreshGrants(generation);
    removeCard(item.requestId);
    done.focus(); // where the person's focus was is gone: read what happened next
    return;
  }
  if (reply.status === 409 && reply.data && reply.data.answered && reply.data.answered.yours) {
    const mine = reply.data.answered;
    outcome("You already answered " + title + " in session " + item.sessionId,
      "your answer stands: " + (mine.decision || "answered").replace(/_/g, " ") + (VIA[mine.via] ? " " + VIA[mine.via] : "") +
      (mine.at ? " at " + new Date(mine.at).toLocaleTimeString() : "") + ". This one was not recorded.", true);
    removeCard(item.requestId);
    return;
  }
  if (reply.status === 409 && reply.data && reply.data.code === "conflict") {
    const theirs = await othersAnswer(item);
    outcome("Someone else answered " + title + " in session " + item.sessionId + " first",
      theirs + ". Your answer was not recorded.", true);
    removeCard(item.requestId);
    return;
  }
  if (reply.status === 410) {
    outcome("Too late for " + title + " in session " + item.sessionId,
      "the question was canceled or expired (410): " + message(reply), true);
    removeCard(item.requestId);
    return;
  }
  if (refused(reply)) return;
  if (reply.status === 0 || reply.status >= 500) {
    // The answer may have been written before the reply was lost: read what the turn holds.
    const found = await recorded(item);
    if (found && found.status !== "requested") {
      answered.add(item.requestId);
      const theirs = found.response ? (found.response.decision || JSON.stringify(found.response)) : found.status;
      outcome("The answer to " + title + " in session " + item.sessionId + " was recorded",
        "it stands as " + theirs + (found.answeredBy ? " by " + found.answeredBy : "") + "; the reply was lost (" +
        message(reply) + ")", false);
      removeCard(item.requestId);
      return;
    }
    place.textContent = (found ? "Not recorded: the question still waits. " : "Not known whether your answer was " +
      "recorded; reload to see. ") + "(" + (reply.status || "no reply") + ": " + message(reply) + ")";
    place.hidden = false;
    return;
  }
  place.textContent = "Not answered (" + reply.status + "): " + message(reply);
  place.hidden = false;
  (errorPlace ? errorPlace.closest("form").querySelector("textarea") : place).focus();
}

const VIA = { cli: "from the CLI", page: "on this page", api: "through the API", slack: "from Slack", email: "from e-mail" };

// Dismissing hides the question from this reader's inbox only; it still waits for everyone else.
async function dismissCard(item) {
  const card = cards.get(item.requestId);
  if (!card || card.busy) return;
  card.busy = true;
  generation += 1;
  const reply = await call("POST", interactionPath(item) + "/dismiss");
  generation += 1;
  card.busy = false;
  const title = item.summary || toolOf(item).title;
  if (reply.status !== 200) {
    if (refused(reply)) return;
    const place = card.element.querySelector(".card-error");
    place.textContent = "Not dismissed (" + reply.status + "): " + message(reply);
    place.hidden = false;
    return;
  }
  removeCard(item.requestId);
  const done = outcome("Dismissed: " + title + " in session " + item.sessionId,
    "hidden from your inbox; it still waits for others", false);
  const undo = document.createElement("button");
  undo.type = "button";
  undo.className = "quiet undo";
  undo.textContent = "Undo";
  undo.setAttribute("aria-label", "Undo dismissing " + title + " in session " + item.sessionId);
  undo.addEventListener("click", async () => {
    undo.disabled = true;
    const back = await call("DELETE", interactionPath(item) + "/dismiss");
    if (back.status === 200) {
      done.remove();
      if (!$("outcomes").children.length) $("answered").hidden = true;
      await refresh();
    } else {
      undo.disabled = false;
      done.querySelector(".output").textContent = "Could not bring it back (" + back.status + "): " + message(back);
    }
  });
  done.append(undo);
  done.focus();
}

async function recorded(item) {
  const reply = await call("GET", turnPath(item));
  if (reply.status !== 200 || !reply.data) return null;
  return (reply.data.interactions || []).find((i) => i.requestId === item.requestId) || null;
}

async function othersAnswer(item) {
  const found = await recorded(item);
  if (!found || !found.response) return "their answer could not be read";
  const decision = found.response.decision || JSON.stringify(found.response);
  const said = found.response.message ? " (\"" + found.response.message + "\")" : "";
  return "their answer: " + decision + said + (found.answeredBy ? " by " + found.answeredBy : "") +
    (found.answeredAt ? " at " + new Date(found.answeredAt).toLocaleString() : "");
}

function outcome(headline, detail, bad) {
  const li = document.createElement("li");
  li.className = bad ? "refused" : "done";
  const strong = document.createElement("strong");
  strong.textContent = plain(headline);
  const text = document.createElement("div");
  text.className = "output";
  text.textContent = plain(detail);
  li.append(strong, text);
  li.tabIndex = -1;
  $("outcomes").prepend(li);
  $("answered").hidden = false;
  return li;
}

// ---- countdowns ----

function tick() {
  const now = Date.now();
  for (const { element, item } of cards.values()) {
    const countdown = element.querySelector(".countdown");
    if (!item.expiresAt) { countdown.textContent = "never"; continue; }
    const left = Math.max(0, Math.round((Date.parse(item.expiresAt) - now) / 1000));
    const h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
    countdown.textContent = left === 0 ? "expired" : "in " + (h ? h + "h " : "") + String(m).padStart(2, "0") + "m " +
      String(s).padStart(2, "0") + "s";
    element.classList.toggle("urgent", left < 300);
  }
}

// ---- start ----

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

async function start() {
  $("refresh").addEventListener("click", async () => { stopped = false; await refresh(); schedule(); });
  $("sign-in-button").addEventListener("click", () => signIn().catch((error) => notice(escapeHtml(error.message), true)));
  $("sign-out").addEventListener("click", () => {
    token = null;
    generation += 1;
    for (const id of [...cards.keys()]) removeCard(id);
    $("mine-list").replaceChildren();
    $("mine").hidden = true;
    $("who").hidden = true;
    $("empty").hidden = true;
    $("audit-table").querySelector("tbody").replaceChildren();
    $("audit-table").hidden = true;
    $("audit-status").textContent = "";
    showSignIn();
  });
  setInterval(tick, 1000);
  startAudit();
  if (config.authMode === "JWT") {
    if (params.has("code") || params.has("error")) {
      try {
        await finishSignIn();
      } catch (error) {
        notice("Not signed in: " + escapeHtml(error.message) + ". Sign in again.", true);
      }
    }
    if (!token) { showSignIn(); return; }
    $("sign-in").hidden = true;
  }
  await refresh();
  schedule();
}

start();
