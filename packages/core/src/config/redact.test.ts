import { describe, expect, it } from 'vitest';
import { redactConfig, redactUrl } from './redact.js';
import { resolveConfig } from './resolveConfig.js';

describe('redactUrl', () => {
  it('hides userinfo and every query value, keeps scheme, host, port and path', () => {
    expect(redactUrl('https://bob:hunter2@llm.example:8443/v1?key=AIzaSECRET&x=1')).toBe(
      'https://[redacted]:[redacted]@llm.example:8443/v1?key=[redacted]&x=[redacted]',
    );
    expect(redactUrl('redis://:pw-SECRET@10.0.0.5:6379/0')).toBe('redis://:[redacted]@10.0.0.5:6379/0');
    expect(redactUrl('https://token-SECRET@idp.example')).toBe('https://[redacted]@idp.example/');
    expect(redactUrl('https://api.example.com/v1')).toBe('https://api.example.com/v1');
    expect(redactUrl('not a url')).toBe('not a url');
  });
});

describe('redactConfig', () => {
  it('redacts URL credentials in any URL-valued key (baseUrl, issuer, publicUrl...)', () => {
    const config = resolveConfig({
      storage: { type: 'memory' },
      ai: { providers: { openai: { baseUrl: 'https://user:PASS-SECRET@proxy.example/v1?key=KEY-SECRET' } } },
      oauth: { provider: { issuer: 'https://client:ISSUER-SECRET@idp.example' }, publicUrl: 'https://api.example.com/?sig=SIG-SECRET' },
    });
    const text = JSON.stringify(redactConfig(config));
    for (const secret of ['PASS-SECRET', 'KEY-SECRET', 'ISSUER-SECRET', 'SIG-SECRET', 'user:']) expect(text).not.toContain(secret);
    expect(text).toContain('https://[redacted]:[redacted]@proxy.example/v1?key=[redacted]');
    expect(text).toContain('https://[redacted]:[redacted]@idp.example/');
  });

  it('redacts every credential of named providers (keys, AWS credentials, service-account JSON, headers)', () => {
    const config = resolveConfig({
      storage: { type: 'memory' },
      ai: {
        providers: {
          mist: { type: 'mistral', apiKey: 'MIST-SECRET', defaultModel: 'm', headers: { 'x-gateway-auth': 'HDR-SECRET' } },
          bed: {
            type: 'bedrock',
            region: 'us-east-1',
            accessKeyId: 'AKIA-SECRET',
            secretAccessKey: 'AWS-SECRET',
            sessionToken: 'TOK-SECRET',
            defaultModel: 'm',
          },
          vx: {
            type: 'vertex',
            project: 'p',
            location: 'us-central1',
            credentials: { private_key: 'PK-SECRET', client_email: 'sa@p.iam' },
            defaultModel: 'm',
          },
        },
      },
    });
    const text = JSON.stringify(redactConfig(config));
    for (const secret of ['MIST-SECRET', 'HDR-SECRET', 'AKIA-SECRET', 'AWS-SECRET', 'TOK-SECRET', 'PK-SECRET', 'sa@p.iam'])
      expect(text).not.toContain(secret);
    expect(text).toContain('"region":"us-east-1"');
  });

  it('redacts the chosen backend and the shared Redis, and shows the derived auth rules (booleans, nothing secret)', () => {
    const config = resolveConfig({
      storage: {
        type: 'postgres',
        shared: 'redis',
        postgres: { connectionString: 'postgres://app:PG-SECRET@db/x', password: 'PW-SECRET' },
        redis: { password: 'REDIS-SECRET' },
      },
      mcp: { auth: { authType: 'jwt' } },
      jwt: { secret: 'JWT-SECRET-'.padEnd(40, 'x') },
    });
    const printed = JSON.stringify(redactConfig(config));
    for (const secret of ['PG-SECRET', 'PW-SECRET', 'REDIS-SECRET', 'JWT-SECRET']) expect(printed).not.toContain(secret);
    const out = redactConfig(config) as typeof config;
    expect(Object.keys(out.storage).sort()).toEqual(['dir', 'postgres', 'redis', 'retention', 'shared', 'type']);
    expect(out.auth).toEqual(config.auth);
    expect(out.auth).toMatchObject({ mode: 'jwt', verifiers: 'jwt', servesWithoutAuth: false });
  });
  it('redacts the TLS client private key of the PostgreSQL connection (storage.postgres.ssl.key), keeps the certificates', () => {
    const pem = '-----BEGIN PRIVATE KEY-----\nPEM-SECRET\n-----END PRIVATE KEY-----';
    const config = resolveConfig({
      storage: { type: 'postgres', postgres: { host: 'db', ssl: { key: pem, cert: 'CLIENT-CERT', ca: 'CA-CERT' } } },
    });
    const out = redactConfig(config) as typeof config;
    expect(JSON.stringify(out)).not.toContain('PEM-SECRET');
    expect(out.storage.type === 'postgres' && out.storage.postgres.ssl).toEqual({
      rejectUnauthorized: true,
      key: '[redacted]',
      cert: 'CLIENT-CERT',
      ca: 'CA-CERT',
    });
  });

  it("shows an alert webhook's receiver by its origin: an incoming-webhook URL is a secret in its path", () => {
    const out = redactConfig({
      alerts: {
        webhooks: [
          { url: 'https://hooks.slack.com/services/T000/B000/XXXXSECRETXXXX', secret: 's'.repeat(32) },
          { url: 'https://alerts.example.com/', secret: 's'.repeat(32) },
        ],
      },
      ai: { providers: { openai: { baseUrl: 'https://api.example.com/v1/path' } } },
    });
    expect(out.alerts.webhooks[0]!.url).toBe('https://hooks.slack.com/[redacted]');
    expect(out.alerts.webhooks[1]!.url).toBe('https://alerts.example.com/');
    expect(JSON.stringify(out)).not.toContain('XXXXSECRETXXXX');
    // Other URLs keep their paths.
    expect(out.ai.providers.openai.baseUrl).toBe('https://api.example.com/v1/path');
  });
});
