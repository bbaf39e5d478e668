'use strict';
// The errors of fixed-window-pg: one class per kind of failure a caller
// handles differently, each carrying the SQLSTATE (err.code) and the
// driver's error (err.cause).  The SQLSTATEs are those fixed_window documents
// (docs/troubleshooting.md); what the classes mean for a caller:
//
//   FixedWindowInputError           the call can never succeed as given: fix it
//   FixedWindowUndefinedPolicyError a named call of a policy nobody defined
//   FixedWindowPermissionError      the role lacks a grant (fw_refund, fw_reset)
//   FixedWindowConfigurationError   the settings do not fit the database: a role,
//                                   database or schema missing, the extension
//                                   not installed; retrying will not help
//   FixedWindowCapacityError        no room for a new counter (53400)
//   FixedWindowStateError           the server is not in a state to answer this
//                                   call (read-only, storage setting, 55000)
//   FixedWindowUnavailableError     the database cannot answer now (down,
//                                   restarting, out of connections or time):
//                                   the only kind failOpen may turn into "ok"
//
// Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

class FixedWindowError extends Error {
  constructor(message, { code, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    this.code = code;
  }
}
class FixedWindowInputError extends FixedWindowError {}
class FixedWindowUndefinedPolicyError extends FixedWindowError {}
class FixedWindowPermissionError extends FixedWindowError {}
class FixedWindowConfigurationError extends FixedWindowError {}
class FixedWindowCapacityError extends FixedWindowError {}
class FixedWindowStateError extends FixedWindowError {}
class FixedWindowUnavailableError extends FixedWindowError {}

// Errors of the connection rather than of a statement, as the pg driver and
// Node report them: no SQLSTATE, only a system error code or a message.
const NETWORK_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ENOENT', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN',
]);
const NETWORK_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Query read timeout|not queryable|Client was closed/;

// PgBouncer before 1.20 reports its own errors, and the server's at login,
// as 08P01 with the server's message: these messages are settings that do
// not fit, not an outage (in English, the server's default lc_messages).
const POOLER_CONFIGURATION = new RegExp([
  'unsupported startup parameter', 'no such (database|user)', 'authentication failed', 'login rejected',
  'does not exist', 'pg_hba\\.conf', 'not permitted to log in', 'is disabled', 'SSL required',
  'permission denied',
].join('|'));

// The class of an error the driver raised, by its SQLSTATE or, for the
// connection's own failures, its system code and message.
function classify(code, message) {
  // data exceptions: a NULL, a value out of range, a period or start that
  // does not read; and a name or key too long
  if (code.startsWith('22') || code === '54000') return FixedWindowInputError;
  if (code === '42704') return FixedWindowUndefinedPolicyError;
  if (code === '42501') return FixedWindowPermissionError;
  if (code === '53400') return FixedWindowCapacityError;
  // A database closed to connections (ALLOW_CONNECTIONS false) is an outage
  // its admin will end; any other 55000 is fixed_window's own.
  if (code === '55000' && /not (currently )?accepting connections/.test(message)) return FixedWindowUnavailableError;
  if (['55000', '55P02', '25006'].includes(code)) return FixedWindowStateError;
  if (code === '08P01' && POOLER_CONFIGURATION.test(message)) return FixedWindowConfigurationError;
  if (/^(28|3D|3F|42)/.test(code)) return FixedWindowConfigurationError;
  if (code.startsWith('08') || ['57P01', '57P02', '57P03', '57014', '53300', '53000'].includes(code)
      || NETWORK_CODES.has(code) || NETWORK_MESSAGES.test(message)) {
    return FixedWindowUnavailableError;
  }
  return FixedWindowError;
}

// The FixedWindowError for what the driver rejected with; one of ours
// passes as it is.
function fromDriver(err) {
  if (err instanceof FixedWindowError) return err;
  const code = String(err?.code ?? '');
  const message = String(err?.message ?? err);
  const Class = classify(code, message);
  return new Class(message, { code: code || undefined, cause: err });
}

module.exports = {
  FixedWindowError,
  FixedWindowInputError,
  FixedWindowUndefinedPolicyError,
  FixedWindowPermissionError,
  FixedWindowConfigurationError,
  FixedWindowCapacityError,
  FixedWindowStateError,
  FixedWindowUnavailableError,
  fromDriver,
};
