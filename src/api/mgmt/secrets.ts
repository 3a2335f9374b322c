/**
 * Reading stored secrets back for their owner (issue 14): a messaging account's password and
 * token, a search index's two tokens. They are sealed at rest (core/secret-box.ts); a row from
 * before the secret key has only hashes, and shows "" until its credentials are reset.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../../core/logger.js';
import type { SearchIndex } from '../../core/management.js';
import type { SecretBox } from '../../core/secret-box.js';
import { encodeToken, hashPassword } from '../../core/token.js';
import type { Account } from '../../core/types.js';
import { accountPasswordContext } from '../../engine/account-factory.js';

export interface IndexTokens {
  token: string;
  readOnlyToken: string;
}

const newToken = (): string => randomBytes(32).toString('base64url');

const indexTokenContext = (id: string): string => `search-token:${id}`;
const indexReadOnlyTokenContext = (id: string): string => `search-read-only-token:${id}`;

/**
 * Opens `sealed`, or "" when there is none. One that does not open was sealed under another key
 * (the key was changed or lost): logged, without any secret, and shown as "" until a reset.
 */
function reveal(
  secrets: SecretBox,
  logger: Logger,
  sealed: string | undefined,
  context: string,
): string {
  if (sealed === undefined) return '';
  const secret = secrets.open(sealed, context);
  if (secret !== undefined) return secret;
  logger.warn(
    { field: context },
    'a stored secret does not open with this secret key (was --secret-key changed?); ' +
      'it shows as "" until it is reset',
  );
  return '';
}

/** The account's password and token, or "" for each when it cannot be read back. */
export function accountCredentials(
  secrets: SecretBox,
  logger: Logger,
  account: Account,
): { password: string; token: string } {
  const password = reveal(
    secrets,
    logger,
    account.passwordSealed,
    accountPasswordContext(account.id),
  );
  return { password, token: password === '' ? '' : encodeToken(account.id, password) };
}

/** The index's two tokens, or "" for each that cannot be read back. */
export function indexTokens(secrets: SecretBox, logger: Logger, index: SearchIndex): IndexTokens {
  return {
    token: reveal(secrets, logger, index.tokenSealed, indexTokenContext(index.id)),
    readOnlyToken: reveal(
      secrets,
      logger,
      index.readOnlyTokenSealed,
      indexReadOnlyTokenContext(index.id),
    ),
  };
}

/** Fresh tokens for index `id`: the tokens to show, and their hashes and sealed forms to store. */
export function newIndexTokens(
  secrets: SecretBox,
  id: string,
): IndexTokens & {
  stored: Pick<
    SearchIndex,
    'tokenHash' | 'readOnlyTokenHash' | 'tokenSealed' | 'readOnlyTokenSealed'
  >;
} {
  const token = newToken();
  const readOnlyToken = newToken();
  return {
    token,
    readOnlyToken,
    stored: {
      tokenHash: hashPassword(token),
      readOnlyTokenHash: hashPassword(readOnlyToken),
      tokenSealed: secrets.seal(token, indexTokenContext(id)),
      readOnlyTokenSealed: secrets.seal(readOnlyToken, indexReadOnlyTokenContext(id)),
    },
  };
}
