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
  const headers = { accept: "application/json" };
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
  notice("");
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
  heading.textContent = tool.title;
  article.setAttribute("aria-labelledby", heading.id);
  for (const agent of item.agentPath || []) {
    const li = document.createElement("li");
    li.textContent = agent;
    element.querySelector(".path ol").append(li);
  }
  const asker = (item.agentPath || []).slice(-1)[0] || "the agent";
  element.querySelector(".reason").textContent = tool.note ||
    (item.name === "approval" ? asker + " wants to run " + tool.title + " with this input:" : asker + " asks (" + item.name + "):");
  const input = element.querySelector(".input");
  input.textContent = JSON.stringify(tool.shown, null, 2);
  input.setAttribute("aria-label", "input of " + tool.title);
  element.querySelector(".session").textContent = item.sessionId;
  element.querySelector(".turn").textContent = item.turnId;
  if (item.childTurnId) {
    element.querySelector(".child").textContent = item.childTurnId;
    element.querySelector(".child-row").hidden = false;
  }
  const countdown = element.querySelector(".countdown");
  if (item.expiresAt) countdown.dateTime = item.expiresAt;
  showApprovals(element, item);

  const approve = element.querySelector(".approve");
  approve.setAttribute("aria-label", "Approve " + tool.title + " in session " + item.sessionId);
  approve.addEventListener("click", () => answer(item, { decision: "approve" }));

  const denyForm = element.querySelector(".deny-form");
  const editForm = element.querySelector(".edit-form");
  let openedBy = approve;
  const opener = (form, button) => () => {
    denyForm.hidden = form !== denyForm;
    editForm.hidden = form !== editForm;
    openedBy = button;
    form.querySelector("textarea").focus();
  };
  // Closing a form gives focus back to the button that opened it, never to Approve.
  const closeForms = () => {
    denyForm.hidden = true;
    editForm.hidden = true;
    openedBy.focus();
  };
  const denyOpen = element.querySelector(".deny-open");
  denyOpen.setAttribute("aria-label", "Deny " + tool.title + " in session " + item.sessionId + "…");
  denyOpen.addEventListener("click", opener(denyForm, denyOpen));
  denyForm.addEventListener("submit", (event) => {
    event.preventDefault();
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
    try {
      edited = JSON.parse(editForm.querySelector("textarea").value);
    } catch (problem) {
      error.textContent = "This is not JSON (" + problem.message + "); nothing was sent.";
      error.hidden = false;
      return;
    }
    answer(item, { decision: "approve", input: edited }, error);
  });
  for (const close of element.querySelectorAll(".close")) {
    close.addEventListener("click", () => {
      if (cards.get(item.requestId)?.closed) { removeCard(item.requestId); return; }
      closeForms();
    });
  }
  element.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !(denyForm.hidden && editForm.hidden)) closeForms();
  });
  return element;
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

async function answer(item, response, errorPlace) {
  const card = cards.get(item.requestId);
  if (!card || card.busy) return;
  card.busy = true;
  const buttons = card.element.querySelectorAll("button");
  buttons.forEach((button) => { button.disabled = true; });
  const place = errorPlace || card.element.querySelector(".card-error");
  place.hidden = true;
  generation += 1;
  const reply = await call("POST", interactionPath(item), { response });
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
    place.textContent = "Not yours to answer (403): " + message(reply);
    place.hidden = false;
    return;
  }
  if ([200, 409, 410].includes(reply.status)) answered.add(item.requestId);
  if (reply.status === 200) {
    const turn = reply.data;
    const verb = response.decision === "deny" ? "Denied" : response.input ? "Approved with your edit" : "Approved";
    const done = outcome(verb + ": " + title + " in session " + item.sessionId, "the turn is " + turn.status +
      (turn.output ? ": " + turn.output : turn.error ? ": " + turn.error : ""), false);
    removeCard(item.requestId);
    done.focus(); // where the person's focus was is gone: read what happened next
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
  strong.textContent = headline;
  const text = document.createElement("div");
  text.className = "output";
  text.textContent = detail;
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

// ---- signing in (JWT mode): authorization code with PKCE ----

const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)))
  .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const randomText = () => b64url(crypto.getRandomValues(new Uint8Array(32)));
const redirectUri = () => location.origin + location.pathname;

async function discovery() {
  const reply = await fetch(config.issuer.replace(/\/$/, "") + "/.well-known/openid-configuration");
  if (!reply.ok) throw new Error("the issuer's discovery document answered " + reply.status);
  return reply.json();
}

async function signIn() {
  const found = await discovery();
  const verifier = randomText();
  const state = randomText();
  sessionStorage.setItem("resumable.pkce", JSON.stringify({ verifier, state, search: location.search }));
  const challenge = b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const query = new URLSearchParams({
    response_type: "code", client_id: config.clientId, redirect_uri: redirectUri(), scope: config.scope,
    state, code_challenge: challenge, code_challenge_method: "S256",
  });
  location.assign(found.authorization_endpoint + "?" + query.toString());
}

async function finishSignIn() {
  const code = params.get("code");
  const pending = JSON.parse(sessionStorage.getItem("resumable.pkce") || "null");
  sessionStorage.removeItem("resumable.pkce");
  if (params.get("error")) throw new Error("the issuer refused the sign-in: " + params.get("error"));
  if (!pending || params.get("state") !== pending.state) throw new Error("the sign-in reply does not match a sign-in this page started");
  history.replaceState(null, "", redirectUri() + (pending.search || ""));
  const found = await discovery();
  const reply = await fetch(found.token_endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code", code, redirect_uri: redirectUri(), client_id: config.clientId,
      code_verifier: pending.verifier,
    }),
  });
  const tokens = await reply.json().catch(() => ({}));
  if (!reply.ok) throw new Error("the issuer would not give a token: " + (tokens.error_description || tokens.error || reply.status));
  const jwt = (value) => typeof value === "string" && value.split(".").length === 3;
  token = jwt(tokens.access_token) ? tokens.access_token : tokens.id_token;
  if (!token) throw new Error("the issuer's reply holds no JWT (access_token or id_token)");
  const claims = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
  $("who-name").textContent = "signed in as " + (claims.email || claims.name || claims.username || claims.sub);
  $("who").hidden = false;
}

function showSignIn() {
  $("sign-in").hidden = false;
  $("status").textContent = "Not signed in.";
}

// ---- start ----

// ---- the audit trail: GET /audit, every page, shown as a table or saved as JSON lines ----

const AUDIT_SHOWN = 1000; // the table shows the first records; the export holds them all

function auditQuery() {
  const query = new URLSearchParams({ since: $("audit-since").value, limit: "500" });
  if ($("audit-until").value) { // the day chosen is included: until the start of the next
    const next = new Date($("audit-until").value + "T00:00:00Z");
    next.setUTCDate(next.getUTCDate() + 1);
    query.set("until", next.toISOString().slice(0, 10));
  }
  for (const [name, id] of [["principal", "audit-principal"], ["tool", "audit-tool"], ["outcome", "audit-outcome"]]) {
    if ($(id).value.trim()) query.set(name, $(id).value.trim());
  }
  return query;
}

async function auditRecords(all) {
  const query = auditQuery();
  const records = [];
  let span = "";
  for (;;) {
    const reply = await call("GET", "/audit?" + query.toString());
    if (reply.status !== 200 || !reply.data || !Array.isArray(reply.data.records)) {
      const problem = new Error(message(reply) + (records.length ? " (after " + plural(records.length, "record") + ")" : ""));
      problem.status = reply.status;
      throw problem;
    }
    records.push(...reply.data.records);
    span = "from " + reply.data.since + " to " + reply.data.until;
    if (!reply.data.cursor || (!all && records.length >= AUDIT_SHOWN)) return { records, span, more: Boolean(reply.data.cursor) };
    query.set("cursor", reply.data.cursor);
    $("audit-status").textContent = "Read " + plural(records.length, "record") + " so far…";
  }
}

function auditRow(record) {
  const row = document.createElement("tr");
  const how = record.authentication || {};
  const detail = [];
  if (record.votes && record.votes.length) detail.push(record.votes.length + " approvals: " + record.votes.map((v) => v.by).join(", "));
  if (record.message) detail.push("message: " + record.message);
  if (record.inputApproved !== null && record.inputApproved !== undefined) detail.push("input: " + JSON.stringify(record.inputApproved));
  else if (record.inputApprovedDigest) detail.push("input " + record.inputApprovedDigest.slice(0, 19) + "…");
  const cells = [record.at.replace("T", " ").replace(/\.\d+Z$/, "Z"), record.outcome, record.tool || "-", record.by || "-",
    how.method || "-", record.sessionId, record.requestId, detail.join("; ")];
  const labels = ["At", "Outcome", "Tool", "By", "How", "Session", "Question", "Detail"];
  cells.forEach((text, index) => {
    const cell = document.createElement("td");
    cell.textContent = text;
    cell.dataset.label = labels[index]; // (a phone shows each row as a card, each cell with its label)
    if (index === 5 || index === 6) cell.className = "id";
    row.appendChild(cell);
  });
  return row;
}

const plural = (count, word) => count + " " + word + (count === 1 ? "" : "s");

function auditProblem(error) {
  // What went wrong, said for a person: the trail is an approver's to read.
  return error.status === 403 ? "only approvers may read the audit trail, and you are not one" : error.message;
}

function auditRangeProblem() {
  const since = $("audit-since").value;
  const until = $("audit-until").value;
  return since && until && until < since ? "“To” (" + until + ") is before “From” (" + since + ")" : null;
}

async function showAudit() {
  const body = $("audit-table").querySelector("tbody");
  body.replaceChildren(); // nothing of an earlier query stays under this one's answer
  $("audit-table").hidden = true;
  if (auditRangeProblem()) { $("audit-status").textContent = "Nothing read: " + auditRangeProblem() + "."; return; }
  $("audit-status").textContent = "Reading the audit trail…";
  try {
    const { records, span, more } = await auditRecords(false);
    body.replaceChildren(...records.slice(0, AUDIT_SHOWN).map(auditRow));
    $("audit-table").hidden = records.length === 0;
    $("audit-status").textContent = (records.length ? plural(records.length, "record") + (more ? " and more" : "") + " " : "No records ") +
      span + (more ? ": the first " + AUDIT_SHOWN + " are shown; export them all as JSON lines." : ".");
  } catch (error) {
    $("audit-status").textContent = "Could not read the audit trail: " + auditProblem(error);
  }
}

async function exportAudit() {
  if (auditRangeProblem()) { $("audit-status").textContent = "Nothing exported: " + auditRangeProblem() + "."; return; }
  $("audit-status").textContent = "Reading the audit trail…";
  try {
    const { records, span } = await auditRecords(true);
    const lines = records.map((record) => JSON.stringify(record) + "\n").join("");
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([lines], { type: "application/x-ndjson" }));
    link.download = "audit-" + auditQuery().get("since") + ".jsonl";
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60000);
    $("audit-status").textContent = "Exported " + plural(records.length, "record") + " " + span + ".";
  } catch (error) {
    $("audit-status").textContent = "Could not export the audit trail: " + auditProblem(error);
  }
}

function startAudit() {
  const weekAgo = new Date(Date.now() - 7 * 86400000);
  $("audit-since").value = weekAgo.toISOString().slice(0, 10);
  $("audit-form").addEventListener("submit", (event) => { event.preventDefault(); showAudit(); });
  $("audit-export").addEventListener("click", () => {
    if ($("audit-form").reportValidity()) exportAudit();
  });
}

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
