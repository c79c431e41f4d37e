// Which IP addresses are not on the public internet, and why: the tables web_fetch checks
// every address against before it connects (the check itself is s04's lesson, in the stage).
//
// What a plain check gets wrong (docs: Under the hood, "Addresses"): `host === "localhost"`
// or a regular expression for 127.x and 10.x misses the other spellings of the same places:
// 0.0.0.0, 169.254.169.254 (cloud metadata, which hands out credentials), [::1],
// [::ffff:127.0.0.1] (IPv4 written as IPv6), 64:ff9b::a9fe:a9fe (through NAT64),
// 2002:7f00:1:: (through 6to4), 100.100.100.200 (carrier-grade NAT, Alibaba's metadata).
// Here an address is turned into one number and compared with IANA's special-purpose ranges;
// an IPv6 address that carries an IPv4 one is judged by the IPv4 address it carries.
import { isIP } from "node:net";

// #region tables
// Refused wherever they hide: an agent that could fetch these would read the machine's own
// services, the office network, or the cloud's instance metadata (which hands out credentials).
// Each range is one no public web server is in (IANA's special-purpose ranges). That includes
// the documentation ranges: they are for examples and never routed on the internet, so where
// one does lead somewhere, it is somewhere local.
const NOT_PUBLIC_V4 = [
  ["0.0.0.0/8", '"this network"; 0.0.0.0 reaches this machine'],
  ["10.0.0.0/8", "private"],
  ["100.64.0.0/10", "carrier-grade NAT; Alibaba Cloud's metadata is 100.100.100.200"],
  ["127.0.0.0/8", "loopback"],
  ["169.254.0.0/16", "link-local; cloud metadata is 169.254.169.254"],
  ["172.16.0.0/12", "private"],
  ["192.0.0.0/24", "IETF protocol assignments"],
  ["192.0.2.0/24", "documentation"],
  ["192.88.99.0/24", "6to4 relays"],
  ["192.168.0.0/16", "private"],
  ["198.18.0.0/15", "benchmarking"],
  ["198.51.100.0/24", "documentation"],
  ["203.0.113.0/24", "documentation"],
  ["224.0.0.0/4", "multicast"],
  ["240.0.0.0/4", "reserved; 255.255.255.255 is broadcast"],
].map(([range, what]) => ({ ...parseRange(range), what }));
// Every public IPv6 address is in 2000::/3, so everything outside it is refused; these have
// a name, and those inside 2000::/3 are refused as well.
const GLOBAL_V6 = parseRange("2000::/3");
const NOT_PUBLIC_V6 = [
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["64:ff9b:1::/48", "local-use NAT64: which IPv4 address it stands for is the network's own choice"],
  ["fc00::/7", "unique local; AWS's metadata is fd00:ec2::254"],
  ["fe80::/10", "link-local"],
  ["ff00::/8", "multicast"],
  ["2001::/23", "IETF protocol assignments: Teredo tunnels, benchmarking"],
  ["2001:db8::/32", "documentation"],
  ["3fff::/20", "documentation"],
].map(([range, what]) => ({ ...parseRange(range), what }));
// IPv6 addresses that carry an IPv4 address: a connection to one reaches that IPv4 address,
// so that is the address checked. `shift`: how many bits lie right of the IPv4 address.
const CARRIERS = [
  { ...parseRange("::ffff:0:0/96"), shift: 0n, how: "written as IPv6" },
  { ...parseRange("64:ff9b::/96"), shift: 0n, how: "through NAT64" },
  { ...parseRange("2002::/16"), shift: 80n, how: "through 6to4" },
];
// #endregion tables

// #region not-public
/** Why `address` is not on the public internet, as "in 10.0.0.0/8 (private)"; undefined when it is public. */
export function notPublic(address: string): string | undefined {
  // Only what a resolver returns: a name or `01.02.03.04` here is a caller's mistake.
  if (isIP(address) === 0) throw new TypeError(`notPublic: ${JSON.stringify(address)} is not an IP address`);
  const number = addressNumber(address);
  if (isIP(address) === 4) return rangeOf(number, NOT_PUBLIC_V4);
  const carrier = CARRIERS.find((range) => inRange(number, range));
  if (carrier) {
    const ipv4 = (number >> carrier.shift) & 0xffffffffn;
    const why = rangeOf(ipv4, NOT_PUBLIC_V4);
    return why && `${dotted(ipv4)} ${carrier.how}, ${why}`;
  }
  return rangeOf(number, NOT_PUBLIC_V6) ?? (inRange(number, GLOBAL_V6) ? undefined : "outside 2000::/3, where every public IPv6 address is");
}
// #endregion not-public

type Range = { first: bigint; bits: number; width: number; text: string };

function parseRange(text: string): Range {
  const [first, bits] = text.split("/");
  return { first: addressNumber(first), bits: Number(bits), width: isIP(first) === 4 ? 32 : 128, text };
}

function inRange(number: bigint, range: Range): boolean {
  const hostBits = BigInt(range.width - range.bits);
  return number >> hostBits === range.first >> hostBits;
}

function rangeOf(number: bigint, ranges: (Range & { what: string })[]): string | undefined {
  const range = ranges.find((candidate) => inRange(number, candidate));
  return range && `in ${range.text} (${range.what})`;
}

// #region address-number
/** An IP address as one number: 32 bits for IPv4, 128 for IPv6. */
function addressNumber(address: string): bigint {
  if (isIP(address) === 4) return address.split(".").reduce((number, byte) => (number << 8n) | BigInt(byte), 0n);
  let text = address.replace(/%.*$/, ""); // a zone (fe80::1%eth0) names an interface, not an address
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text); // ::ffff:1.2.3.4: the last two groups written as IPv4
  if (tail) {
    const ipv4 = addressNumber(tail[1]);
    text = `${text.slice(0, tail.index)}${(ipv4 >> 16n).toString(16)}:${(ipv4 & 0xffffn).toString(16)}`;
  }
  const [head, rest] = text.split("::");
  const groups = (part = "") => (part ? part.split(":") : []);
  const zeros = Array<string>(8 - groups(head).length - groups(rest).length).fill("0"); // what "::" stands for
  return [...groups(head), ...zeros, ...groups(rest)].reduce((number, group) => (number << 16n) | BigInt(`0x${group}`), 0n);
}
// #endregion address-number

const dotted = (ipv4: bigint) => [24n, 16n, 8n, 0n].map((shift) => (ipv4 >> shift) & 255n).join(".");
