// A small cache for work done again and again on the same few inputs (parsing a stage file,
// reading its regions): it keeps the values made last and forgets the oldest.

/**
 * `make`, remembering the last `size` values it made. `keyOf` names the arguments: calls
 * whose arguments have the same key get the same value.
 */
export function remembering<A extends unknown[], V>(size: number, keyOf: (...args: A) => string, make: (...args: A) => V): (...args: A) => V {
  const recent = new Map<string, V>();
  return (...args) => {
    const key = keyOf(...args);
    if (recent.has(key)) return recent.get(key)!;
    const value = make(...args);
    recent.set(key, value);
    if (recent.size > size) recent.delete(recent.keys().next().value!);
    return value;
  };
}
