"use strict";
// Signing in on the inbox page (JWT mode): the OpenID Connect authorization-code flow with PKCE; the
// token is kept in memory only (inbox.js holds it as `token`).

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
  sessionStorage.setItem("resumable.pkce", JSON.stringify({ verifier, state, search: location.search, hash: location.hash }));
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
  history.replaceState(null, "", redirectUri() + (pending.search || "") + (pending.hash || ""));
  if (/^#q-[A-Za-z0-9_-]+$/.test(pending.hash || "")) linked = pending.hash.slice(1); // (the question the link named)
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
