import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Creates `file` holding 256 random bits, unless it exists (then leaves it). The key is written whole to a
 * file of this process's own and hard-linked to its name, which either appears complete or fails with EEXIST:
 * instances starting together on one data directory never read a file another is still writing (a `wx` create
 * then write left a moment where the name held no key yet), and all end with the one key that won.
 */
function createKeyFile(file: string): void {
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(tmp, randomBytes(32).toString('base64'), { flag: 'wx', mode: 0o600 });
  try {
    linkSync(tmp, file);
  } catch (err) {
    if ((err as { code?: string }).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(tmp);
  }
}

/**
 * Encrypts secrets at rest (webhook signing secrets, ad-platform credentials)
 * with AES-256-GCM. The key comes from SVC_SECRET_KEY when set (any string;
 * SHA-256 of it is the key), else from `secret.key` in the data directory,
 * created with 256 random bits and mode 0600 on first use.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  static forDataDir(dataDir: string, envKey = process.env.SVC_SECRET_KEY): SecretBox {
    if (envKey) return new SecretBox(createHash('sha256').update(envKey).digest());
    const file = path.join(dataDir, 'secret.key');
    if (!existsSync(file)) {
      createKeyFile(file);
      chmodSync(file, 0o600);
    }
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    if (key.length !== 32) throw new Error(`${file} does not hold a 256-bit key`);
    return new SecretBox(key);
  }

  /** The key of a data directory when there is one (SVC_SECRET_KEY or secret.key), without creating it. */
  static existing(dataDir: string, envKey = process.env.SVC_SECRET_KEY): SecretBox | null {
    if (envKey || existsSync(path.join(dataDir, 'secret.key'))) return SecretBox.forDataDir(dataDir, envKey);
    return null;
  }

  /** A one-way fingerprint of the key: instances sharing a database compare it to know they share the key. */
  fingerprint(): string {
    return createHash('sha256').update('svc secret key check\0').update(this.key).digest('hex').slice(0, 32);
  }

  /**
   * HMAC-SHA256 of `data` under a key derived from this key for one `purpose`
   * (signed report links), so a signature made for one use never verifies for another.
   */
  mac(purpose: string, data: string): Buffer {
    const key = createHmac('sha256', this.key).update(`svc mac key\0${purpose}`).digest();
    return createHmac('sha256', key).update(data, 'utf8').digest();
  }

  /** `v1.<iv>.<tag>.<ciphertext>`, base64url parts. */
  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }

  open(sealed: string): string {
    const [v, iv, tag, ct] = sealed.split('.');
    if (v !== 'v1' || !iv || !tag || ct === undefined) throw new Error('unreadable sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }
}
