// A small cache for work done again and again on the same few inputs (parsing a stage file,
// reading its regions): it keeps the values made last and forgets the oldest.

/** A function that makes a value from a key, remembering the last `size` values it made. */
export function remembering<V>(size: number, make: (key: string) => V): (key: string) => V {
  const recent = new Map<string, V>();
  return (key) => {
    if (recent.has(key)) return recent.get(key)!;
    const value = make(key);
    recent.set(key, value);
    if (recent.size > size) recent.delete(recent.keys().next().value!);
    return value;
  };
}
