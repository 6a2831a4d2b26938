import { escapeHtml } from './oauthResponses.js';
import type { AuthorizationRequest, ClientRecord } from './records.js';

export interface ConsentPageInput {
  client: ClientRecord;
  request: AuthorizationRequest;
  /** Where the form posts (our /oauth/authorize). */
  action: string;
  requestId: string;
  csrfToken: string;
  /** The identity provider's host, so the user knows where they are sent next. */
  providerHost?: string;
}

const SCOPE_TEXT: Record<string, string> = {
  mcp: 'use the MCP server on your behalf',
  'mcp:call': 'call tools on the MCP server',
  'mcp:admin': 'administer the server',
};

/**
 * The consent step for a dynamically registered client (MCP security best practices:
 * confused deputy). Everything shown about the client came from the client itself, so it is
 * escaped and the redirect address, the one fact that matters, is shown in full.
 */
export function consentPage(p: ConsentPageInput): string {
  const name = p.client.client_name ?? 'An unnamed application';
  const redirect = new URL(p.request.redirectUri);
  const scopes = p.request.scopes
    .map((s) => `<li><code>${escapeHtml(s)}</code>${SCOPE_TEXT[s] ? ` — ${escapeHtml(SCOPE_TEXT[s])}` : ''}</li>`)
    .join('');
  const site = p.client.client_uri ? `<p class="muted">Says it is from: ${escapeHtml(p.client.client_uri)}</p>` : '';
  // Client ID Metadata Documents: the client is known by the URL of its document, so its host is
  // the one fact about it that is verified. Loopback redirects cannot be attributed to anyone
  // (any program on the user's machine can listen there): the MCP spec asks for a warning.
  const docHost = p.client.metadata_document ? new URL(p.client.client_id).host : undefined;
  const loopbackOnly = p.client.redirect_uris.every((u) => isLoopback(u));
  const identity = docHost
    ? `<p class="muted">Identified by its published description at <strong id="client-host">${escapeHtml(docHost)}</strong> (<code>${escapeHtml(p.client.client_id)}</code>)</p>`
    : '';
  const warning = docHost
    ? `<p class="warn">Approve only if you started this sign-in from an application published by <strong>${escapeHtml(docHost)}</strong>.</p>`
    : '<p class="warn">This application registered itself with this server. Approve only if you started this sign-in and trust it.</p>';
  const localWarning = loopbackOnly
    ? '<p class="warn" id="localhost-warning">The sign-in result goes to a program on your own computer (localhost). Any program running there could claim to be this application.</p>'
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Authorize ${escapeHtml(name)}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}
h1{font-size:1.3rem}.muted{color:#555;font-size:.9rem}.box{border:1px solid #ccc;border-radius:8px;padding:1rem;margin:1rem 0}
code{background:#f3f3f3;padding:0 .25rem;border-radius:3px;word-break:break-all}
.warn{background:#fff6e0;border:1px solid #e8c35a;border-radius:8px;padding:.75rem}
button{font-size:1rem;padding:.55rem 1.2rem;border-radius:6px;border:1px solid #888;margin-right:.5rem;cursor:pointer}
button.primary{background:#1f5fd6;color:#fff;border-color:#1f5fd6}
</style></head>
<body>
<h1><span id="client-name">${escapeHtml(name)}</span> wants to access your account</h1>
${site}
${identity}
<div class="box">
<p>It will be able to:</p><ul>${scopes}</ul>
<p>After you sign in${p.providerHost ? ` at <strong>${escapeHtml(p.providerHost)}</strong>` : ''}, you will be sent back to <strong id="redirect-host">${escapeHtml(redirect.host || redirect.protocol)}</strong>:<br><code id="redirect-uri">${escapeHtml(redirect.href)}</code></p>
</div>
${warning}
${localWarning}
<form method="post" action="${escapeHtml(p.action)}">
<input type="hidden" name="request_id" value="${escapeHtml(p.requestId)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(p.csrfToken)}">
<button type="submit" class="primary" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</form>
</body></html>`;
}

function isLoopback(uri: string): boolean {
  try {
    const u = new URL(uri);
    return u.protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(u.hostname);
  } catch {
    return false;
  }
}
