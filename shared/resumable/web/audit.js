"use strict";
// The inbox page's audit trail (approvers only): GET /audit, every page, shown as a table or saved as
// JSON lines. The page's script is this file, then inbox.js (which uses its helpers and starts it).

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
    cell.textContent = plain(text);
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
