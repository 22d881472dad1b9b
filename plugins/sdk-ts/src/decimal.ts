/**
 * Exact decimals: money arrives from the host as decimal text, is added, compared and averaged
 * as a scaled bigint, and leaves as the exact JSON number it is. Never a float.
 */
export class Decimal {
  private _units: bigint | undefined;
  private _scale: number;
  /** The host's text of a decimal read from its rows, kept until the value is first used in
   * arithmetic: most of a report's amounts are only passed on, and parsing each in interpreted
   * code costs more than the rest of the report. */
  private _text: string | undefined;

  /** The value is `units / 10^scale`. */
  private constructor(units: bigint | undefined, scale: number, text?: string) {
    this._units = units;
    this._scale = scale;
    this._text = text;
  }

  /** The value is `units / 10^scale`. */
  get units(): bigint {
    if (this._units === undefined) this.parseText();
    return this._units as bigint;
  }

  /** The value is `units / 10^scale`. */
  get scale(): number {
    if (this._units === undefined) this.parseText();
    return this._scale;
  }

  /** The host's text (`-?digits[.digits]`, as `fromHost` says) read with the engine's own
   * string functions and `BigInt`, not character by character in interpreted code. */
  private parseText(): void {
    const text = this._text as string;
    const point = text.indexOf(".");
    this._units = BigInt(point < 0 ? text : text.slice(0, point) + text.slice(point + 1));
    this._scale = point < 0 ? 0 : text.length - point - 1;
  }

  /**
   * A decimal as the host writes one in a query's rows: plain text in its shortest form
   * (`"350000.25"`, `"-3"`: no exponent, no trailing zeros), parsed only when first used.
   * @internal
   */
  static fromHost(text: string): Decimal {
    return new Decimal(undefined, 0, text);
  }

  static readonly ZERO = new Decimal(0n, 0);

  /** Parses plain decimal text (`"350000.25"`, `"-3"`); throws on anything else. */
  static parse(text: string): Decimal {
    const d = Decimal.tryParse(text);
    if (d === undefined) throw new RangeError(`not a decimal number: ${JSON.stringify(text)}`);
    return d;
  }

  /** Parses plain decimal text, or `undefined`. Exponents are accepted (`1e3`). Written without
   * regular expressions: inside the component, JavaScript is interpreted, and a regex per value
   * costs more than the rest of a report. */
  static tryParse(text: string): Decimal | undefined {
    let i = 0;
    let end = text.length;
    while (i < end && text.charCodeAt(i) <= 32) i++;
    while (end > i && text.charCodeAt(end - 1) <= 32) end--;
    const neg = text.charCodeAt(i) === 45; // -
    if (neg) i++;
    let digits = "";
    let scale = 0;
    let seenDigit = false;
    let seenPoint = false;
    for (; i < end; i++) {
      const c = text.charCodeAt(i);
      if (c >= 48 && c <= 57) {
        digits += text[i];
        seenDigit = true;
        if (seenPoint) scale++;
      } else if (c === 46 && !seenPoint && seenDigit) {
        seenPoint = true;
      } else break;
    }
    if (!seenDigit) return undefined;
    if (i < end) {
      const c = text.charCodeAt(i);
      if (c !== 101 && c !== 69) return undefined; // e, E
      const exp = text.slice(i + 1, end);
      if (!/^[+-]?\d+$/.test(exp)) return undefined;
      scale -= Number(exp);
    }
    let units = BigInt(digits);
    if (scale < 0) {
      units *= pow10(-scale);
      scale = 0;
    }
    return new Decimal(neg ? -units : units, scale);
  }

  /** A whole number (a count), exactly. */
  static of(n: number | bigint): Decimal {
    if (typeof n === "number" && !Number.isSafeInteger(n)) {
      throw new RangeError(`${n} is not a safe integer: use Decimal.parse for fractions`);
    }
    return new Decimal(BigInt(n), 0);
  }

  private at(scale: number): bigint {
    return scale === this.scale ? this.units : this.units * pow10(scale - this.scale);
  }

  /** The exact sum. */
  plus(other: Decimal): Decimal {
    const scale = Math.max(this.scale, other.scale);
    return new Decimal(this.at(scale) + other.at(scale), scale);
  }

  /** -1, 0 or 1. */
  compare(other: Decimal): number {
    const scale = Math.max(this.scale, other.scale);
    const a = this.at(scale);
    const b = other.at(scale);
    return a < b ? -1 : a > b ? 1 : 0;
  }

  /** `this / n` rounded to 2 decimal places, half away from zero. */
  average(n: number | bigint): Decimal {
    const scale = Math.max(this.scale, 2);
    const num = this.at(scale);
    const abs = num < 0n ? -num : num;
    const den = BigInt(n) * pow10(scale - 2);
    let cents = abs / den;
    if (2n * (abs % den) >= den) cents += 1n;
    return new Decimal(num < 0n ? -cents : cents, 2);
  }

  /** The plain decimal text, without exponent or trailing zeros. */
  toString(): string {
    if (this._text !== undefined) return this._text;
    const neg = this.units < 0n;
    let digits = (neg ? -this.units : this.units).toString();
    if (this.scale === 0) return neg && digits !== "0" ? `-${digits}` : digits;
    while (digits.length <= this.scale) digits = `0${digits}`;
    let cut = digits.length;
    const point = digits.length - this.scale;
    while (cut > point && digits.charCodeAt(cut - 1) === 48) cut--;
    const text = cut > point ? `${digits.slice(0, point)}.${digits.slice(point, cut)}` : digits.slice(0, point);
    return neg && text !== "0" ? `-${text}` : text;
  }
}

const POWERS: bigint[] = [1n];

/** 10^n as a bigint (kept: exponentiation is slow in the component's interpreter). */
function pow10(n: number): bigint {
  while (POWERS.length <= n) POWERS.push(POWERS[POWERS.length - 1] * 10n);
  return POWERS[n];
}
