import { describe, expect, it } from 'vitest';
import { companyDomainOfEmail, resolveCompanyDomain } from '../../src/domain/accounts/domain.js';
import { isFreeMailDomain } from '../../src/domain/accounts/free-mail.js';

const domainOf = (s: string) => {
  const r = resolveCompanyDomain(s);
  return r.ok ? r.domain : `refused:${r.reason}`;
};

describe('company domain resolution', () => {
  it('passes the cases the skills rely on', () => {
    expect(domainOf('https://www.Example.co.uk/path')).toBe('example.co.uk');
    expect(domainOf('jane@mail.example.com')).toBe('example.com');
    expect(domainOf('bob@gmail.com')).toBe('refused:free_mail');
    expect(domainOf('EXAMPLE.com.')).toBe('example.com');
    expect(domainOf('mail.google.com')).toBe('google.com');
    expect(domainOf('shop.example.co.uk')).toBe('example.co.uk');
    expect(domainOf('bücher.de')).toBe('xn--bcher-kva.de');
  });

  it('normalizes case, trailing dots, ports, paths, queries and IDN in every input form', () => {
    expect(domainOf('https://BÜCHER.de/katalog?q=1#x')).toBe('xn--bcher-kva.de');
    expect(domainOf('xn--bcher-kva.de')).toBe('xn--bcher-kva.de');
    expect(domainOf('Jane.Doe@Sub.Mail.EXAMPLE.COM.')).toBe('example.com');
    expect(domainOf('example.com..')).toBe('example.com');
    expect(domainOf('example.com:8443/a/b')).toBe('example.com');
    expect(domainOf('  https://example.org  ')).toBe('example.org');
    expect(domainOf('http://user:pw@www.example.net:8080/')).toBe('example.net');
  });

  it('is Public Suffix List aware, private suffixes included', () => {
    expect(domainOf('a.b.c.example.co.uk')).toBe('example.co.uk');
    expect(domainOf('acme.myshopify.com')).toBe('acme.myshopify.com');
    expect(domainOf('shop.acme.myshopify.com')).toBe('acme.myshopify.com');
    expect(domainOf('foo.github.io')).toBe('foo.github.io');
    expect(domainOf('co.uk')).toBe('refused:invalid');
    expect(domainOf('myshopify.com')).toBe('refused:invalid');
    expect(domainOf('host.unknowntld')).toBe('refused:invalid');
  });

  it('refuses free mail by the full host and by its registrable domain', () => {
    for (const e of ['x@gmail.com', 'x@GMAIL.COM.', 'x@googlemail.com', 'x@proton.me', 'x@pm.me', 'x@hey.com', 'x@fastmail.com', 'x@mail.yahoo.co.uk', 'x@yahoo.co.uk', 'x@outlook.com']) {
      expect(domainOf(e), e).toBe('refused:free_mail');
    }
    const r = resolveCompanyDomain('someone@mail.yahoo.co.uk');
    expect(r).toMatchObject({ ok: false, reason: 'free_mail', domain: 'yahoo.co.uk', host: 'mail.yahoo.co.uk', kind: 'email' });
    expect(domainOf('https://gmail.com/')).toBe('refused:free_mail');
  });

  it('keeps false positives of the maintained list usable as company keys', () => {
    expect(isFreeMailDomain('example.com')).toBe(false);
    expect(isFreeMailDomain('gmail.com')).toBe(true);
    expect(isFreeMailDomain('proton.me')).toBe(true);
    expect(domainOf('ceo@example.com')).toBe('example.com');
  });

  it('refuses what is not a domain', () => {
    for (const s of ['', '   ', 'a b.com', '1.2.3.4', 'http://[::1]/', 'http://', 'jane@', 'localhost', 'http://10.0.0.1:80/x']) {
      expect(domainOf(s), JSON.stringify(s)).toBe('refused:invalid');
    }
  });

  it('gives the company domain of an email, or null for free mail and malformed addresses', () => {
    expect(companyDomainOfEmail('jane@mail.example.com')).toBe('example.com');
    expect(companyDomainOfEmail('bob@gmail.com')).toBeNull();
    expect(companyDomainOfEmail('example.com')).toBeNull();
    expect(companyDomainOfEmail('x@co.uk')).toBeNull();
  });
});
