// lib/machinery/addresses.ts: which IP addresses web_fetch must not reach, and the reason the
// model reads when one is refused. Every range in the tables is tested at both of its ends and
// just outside them, so a range typed one bit too wide or too narrow fails here; and the
// spellings that hide an address (IPv4 written as IPv6, NAT64, 6to4, a zone id) are tested
// with the address they carry. How web_fetch uses this (every address, every hop) is tested
// with the stages, in tests/s04_web_fetch.test.ts.
import { describe, expect, it } from "vitest";
import { notPublic } from "../../lib/machinery/addresses.ts";

const OUTSIDE_GLOBAL = "outside 2000::/3, where every public IPv6 address is";
const PUBLIC = undefined;

const LOOPBACK = "in 127.0.0.0/8 (loopback)";
const METADATA = "in 169.254.0.0/16 (link-local; cloud metadata is 169.254.169.254)";
const MULTICAST = "in 224.0.0.0/4 (multicast)";
const RESERVED = "in 240.0.0.0/4 (reserved; 255.255.255.255 is broadcast)";

/**
 * Each IPv4 range: its reason, addresses inside it (its first and last among them), and the
 * addresses just outside it with what they are (most are public; a few are the next range).
 */
const V4: [range: string, what: string, inside: string[], outside: [string, string | undefined][]][] = [
  ["0.0.0.0/8", '"this network"; 0.0.0.0 reaches this machine', ["0.0.0.0", "0.255.255.255"], [["1.0.0.0", PUBLIC]]],
  ["10.0.0.0/8", "private", ["10.0.0.0", "10.1.2.3", "10.255.255.255"], [["9.255.255.255", PUBLIC], ["11.0.0.0", PUBLIC]]],
  ["100.64.0.0/10", "carrier-grade NAT; Alibaba Cloud's metadata is 100.100.100.200", ["100.64.0.0", "100.100.100.200", "100.127.255.255"], [["100.63.255.255", PUBLIC], ["100.128.0.0", PUBLIC]]],
  ["127.0.0.0/8", "loopback", ["127.0.0.0", "127.0.0.1", "127.255.255.255"], [["126.255.255.255", PUBLIC], ["128.0.0.0", PUBLIC]]],
  ["169.254.0.0/16", "link-local; cloud metadata is 169.254.169.254", ["169.254.0.0", "169.254.169.254", "169.254.255.255"], [["169.253.255.255", PUBLIC], ["169.255.0.0", PUBLIC]]],
  ["172.16.0.0/12", "private", ["172.16.0.0", "172.31.255.255"], [["172.15.255.255", PUBLIC], ["172.32.0.0", PUBLIC]]],
  ["192.0.0.0/24", "IETF protocol assignments", ["192.0.0.0", "192.0.0.170", "192.0.0.255"], [["191.255.255.255", PUBLIC], ["192.0.1.0", PUBLIC]]],
  ["192.0.2.0/24", "documentation", ["192.0.2.0", "192.0.2.255"], [["192.0.1.255", PUBLIC], ["192.0.3.0", PUBLIC]]],
  ["192.88.99.0/24", "6to4 relays", ["192.88.99.0", "192.88.99.255"], [["192.88.98.255", PUBLIC], ["192.88.100.0", PUBLIC]]],
  ["192.168.0.0/16", "private", ["192.168.0.0", "192.168.255.255"], [["192.167.255.255", PUBLIC], ["192.169.0.0", PUBLIC]]],
  ["198.18.0.0/15", "benchmarking", ["198.18.0.0", "198.19.255.255"], [["198.17.255.255", PUBLIC], ["198.20.0.0", PUBLIC]]],
  ["198.51.100.0/24", "documentation", ["198.51.100.0", "198.51.100.255"], [["198.51.99.255", PUBLIC], ["198.51.101.0", PUBLIC]]],
  ["203.0.113.0/24", "documentation", ["203.0.113.0", "203.0.113.255"], [["203.0.112.255", PUBLIC], ["203.0.114.0", PUBLIC]]],
  ["224.0.0.0/4", "multicast", ["224.0.0.0", "224.0.0.1", "239.255.255.255"], [["223.255.255.255", PUBLIC], ["240.0.0.0", RESERVED]]],
  ["240.0.0.0/4", "reserved; 255.255.255.255 is broadcast", ["240.0.0.0", "255.255.255.255"], [["239.255.255.255", MULTICAST]]],
];

/** The same for IPv6. Outside 2000::/3 nothing is public, so the neighbours there have that reason. */
const V6: [range: string, what: string, inside: string[], outside: [string, string | undefined][]][] = [
  ["::/128", "unspecified", ["::", "0:0:0:0:0:0:0:0"], [["::1", "in ::1/128 (loopback)"]]],
  ["::1/128", "loopback", ["::1", "0000:0000:0000:0000:0000:0000:0000:0001"], [["::", "in ::/128 (unspecified)"], ["::2", OUTSIDE_GLOBAL]]],
  [
    "64:ff9b:1::/48", "local-use NAT64: which IPv4 address it stands for is the network's own choice",
    ["64:ff9b:1::", "64:ff9b:1::7f00:1", "64:ff9b:1:a9fe:a9:fe00::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff"],
    [["64:ff9b:0:ffff:ffff:ffff:ffff:ffff", OUTSIDE_GLOBAL], ["64:ff9b:2::", OUTSIDE_GLOBAL]],
  ],
  ["fc00::/7", "unique local; AWS's metadata is fd00:ec2::254", ["fc00::", "fc00::1", "fd00:ec2::254", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"], [["fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", OUTSIDE_GLOBAL], ["fe00::", OUTSIDE_GLOBAL]]],
  ["fe80::/10", "link-local", ["fe80::", "fe80::1", "FE80::1", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff"], [["fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", OUTSIDE_GLOBAL], ["fec0::", OUTSIDE_GLOBAL]]],
  ["ff00::/8", "multicast", ["ff00::", "ff02::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"], [["feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", OUTSIDE_GLOBAL]]],
  // Inside 2000::/3, where the neighbours are public.
  [
    "2001::/23", "IETF protocol assignments: Teredo tunnels, benchmarking",
    ["2001::", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:2::1", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff"],
    [["2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PUBLIC], ["2001:200::", PUBLIC]],
  ],
  ["2001:db8::/32", "documentation", ["2001:db8::", "2001:db8::1", "2001:0db8:ffff:ffff:ffff:ffff:ffff:ffff"], [["2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", PUBLIC], ["2001:db9::", PUBLIC]]],
  ["3fff::/20", "documentation", ["3fff::", "3fff::1", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff"], [["3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PUBLIC], ["3fff:1000::", PUBLIC]]],
];

const cases = (table: typeof V4) =>
  table.flatMap(([range, what, inside, outside]) => [
    ...inside.map((address) => [range, address, `in ${range} (${what})`] as const),
    ...outside.map(([address, why]) => [range, address, why] as const),
  ]);

describe("notPublic", () => {
  it.each(["01.02.03.04", "127.000.000.001", "example.com", ""])("refuses %j, which is no IP address, with a clear error (never a stack overflow)", (text) => {
    expect(() => notPublic(text)).toThrow(`notPublic: ${JSON.stringify(text)} is not an IP address`);
  });

  it.each(cases(V4))("IPv4 %s: %s is %s", (_range, address, why) => {
    expect(notPublic(address)).toBe(why);
  });

  it.each(cases(V6))("IPv6 %s: %s is %s", (_range, address, why) => {
    expect(notPublic(address)).toBe(why);
  });

  it.each([
    ["2000::", PUBLIC],
    ["3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", PUBLIC],
    ["1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", OUTSIDE_GLOBAL],
    ["4000::", OUTSIDE_GLOBAL],
    ["100::1", OUTSIDE_GLOBAL], // discard-only
    ["5f00::1", OUTSIDE_GLOBAL],
    ["::127.0.0.1", OUTSIDE_GLOBAL], // "IPv4-compatible", long retired: nothing carries it to 127.0.0.1, and it is not public either
    ["::ffff:0:7f00:1", OUTSIDE_GLOBAL], // "IPv4-translated": not one of the carriers
  ])("IPv6 outside the ranges with a name: %s is public only inside 2000::/3 (%s)", (address, why) => {
    expect(notPublic(address)).toBe(why);
  });

  describe("an IPv6 address that carries an IPv4 one is judged by the IPv4 address", () => {
    // #region carriers
    it.each([
      // IPv4 written as IPv6 (::ffff:0:0/96), with dots or in hex
      ["::ffff:127.0.0.1", `127.0.0.1 written as IPv6, ${LOOPBACK}`],
      ["::ffff:7f00:1", `127.0.0.1 written as IPv6, ${LOOPBACK}`],
      ["::FFFF:7F00:1", `127.0.0.1 written as IPv6, ${LOOPBACK}`],
      ["0:0:0:0:0:ffff:7f00:1", `127.0.0.1 written as IPv6, ${LOOPBACK}`],
      ["::ffff:a9fe:a9fe", `169.254.169.254 written as IPv6, ${METADATA}`],
      ["::ffff:0:0", '0.0.0.0 written as IPv6, in 0.0.0.0/8 ("this network"; 0.0.0.0 reaches this machine)'],
      ["::ffff:ffff:ffff", `255.255.255.255 written as IPv6, ${RESERVED}`],
      ["::ffff:93.184.215.14", PUBLIC],
      // through NAT64 (64:ff9b::/96)
      ["64:ff9b::a9fe:a9fe", `169.254.169.254 through NAT64, ${METADATA}`],
      ["64:ff9b::10.0.0.1", "10.0.0.1 through NAT64, in 10.0.0.0/8 (private)"],
      ["64:ff9b::7f00:1", `127.0.0.1 through NAT64, ${LOOPBACK}`],
      ["64:ff9b::93.184.215.14", PUBLIC],
      ["64:ff9b::5db8:d70e", PUBLIC],
      // through 6to4 (2002::/16): the IPv4 address is the 32 bits after 2002:
      ["2002:7f00:1::", `127.0.0.1 through 6to4, ${LOOPBACK}`],
      ["2002:a9fe:a9fe::1", `169.254.169.254 through 6to4, ${METADATA}`],
      ["2002:c0a8:101::", "192.168.1.1 through 6to4, in 192.168.0.0/16 (private)"],
      ["2002:5db8:d70e::1", PUBLIC],
    ])("%s: %s", (address, why) => {
      expect(notPublic(address)).toBe(why);
    });
    // #endregion carriers

    it.each([
      ["::fffe:ffff:ffff", OUTSIDE_GLOBAL], // just below ::ffff:0:0/96
      ["::1:0:0:0", OUTSIDE_GLOBAL], // just above it
      ["64:ff9a:ffff:ffff:ffff:ffff:7f00:1", OUTSIDE_GLOBAL], // below 64:ff9b::/96
      ["64:ff9b::1:7f00:1", OUTSIDE_GLOBAL], // above it: 64:ff9b:0:0:0:1:7f00:1
      ["2001:ffff:7f00:1::", PUBLIC], // below 2002::/16
      ["2003:7f00:1::", PUBLIC], // above it
    ])("just outside a carrier's range, %s carries nothing: %s", (address, why) => {
      expect(notPublic(address)).toBe(why);
    });
  });

  it("judges an address with a zone id (fe80::1%eth0) by the address, not the interface", () => {
    expect(notPublic("fe80::1%eth0")).toBe("in fe80::/10 (link-local)");
    expect(notPublic("fe80::1%2")).toBe("in fe80::/10 (link-local)");
    expect(notPublic("::ffff:7f00:1%lo")).toBe(`127.0.0.1 written as IPv6, ${LOOPBACK}`);
    expect(notPublic("2606:2800:220:1:248:1893:25c8:1946%eth0")).toBe(PUBLIC);
  });

  // #region places
  it("names the places an agent must never read: this machine, cloud metadata, the office network", () => {
    expect(notPublic("0.0.0.0")).toBe('in 0.0.0.0/8 ("this network"; 0.0.0.0 reaches this machine)');
    expect(notPublic("127.0.0.1")).toBe(LOOPBACK);
    expect(notPublic("::1")).toBe("in ::1/128 (loopback)");
    expect(notPublic("169.254.169.254")).toBe(METADATA);
    expect(notPublic("100.100.100.200")).toBe("in 100.64.0.0/10 (carrier-grade NAT; Alibaba Cloud's metadata is 100.100.100.200)");
    expect(notPublic("fd00:ec2::254")).toBe("in fc00::/7 (unique local; AWS's metadata is fd00:ec2::254)");
    expect(notPublic("192.168.1.1")).toBe("in 192.168.0.0/16 (private)");
  });
  // #endregion places

  it.each(["93.184.215.14", "8.8.8.8", "1.1.1.1", "2606:2800:220:1:248:1893:25c8:1946", "2a00:1450:4001:82b::200e"])(
    "answers undefined for a public address: %s",
    (address) => {
      expect(notPublic(address)).toBeUndefined();
    },
  );
});
