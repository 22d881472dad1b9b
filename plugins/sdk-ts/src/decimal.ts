/**
 * Exact decimals: money arrives from the host as decimal text, is added, compared and averaged
 * as a scaled bigint, and leaves as the exact JSON number it is. Never a float.
 */
export class Decimal {
  /** The value is `units / 10^scale`. */
  private constructor(
    readonly units: bigint,
    readonly scale: number,
  ) {}

  static readonly ZERO = new Decimal(0n, 0);

  /** Parses plain decimal text (`"350000.25"`, `"-3"`); throws on anything else. */
  static parse(text: string): Decimal {
    const d = Decimal.tryParse(text);
    if (d === undefined) throw new RangeError(`not a decimal number: ${JSON.stringify(text)}`);
    return d;
  }

  /** Parses plain decimal text, or `undefined`. Exponents are accepted (`1e3`). */
  static tryParse(text: string): Decimal | undefined {
    const m = /^(-?)(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim());
    if (!m) return undefined;
    const [, sign, whole, frac = "", exp = "0"] = m;
    let units = BigInt(whole + frac);
    let scale = frac.length - Number(exp);
    if (scale < 0) {
      units *= 10n ** BigInt(-scale);
      scale = 0;
    }
    return new Decimal(sign ? -units : units, scale);
  }

  /** A whole number (a count), exactly. */
  static of(n: number | bigint): Decimal {
    if (typeof n === "number" && !Number.isSafeInteger(n)) {
      throw new RangeError(`${n} is not a safe integer: use Decimal.parse for fractions`);
    }
    return new Decimal(BigInt(n), 0);
  }

  private at(scale: number): bigint {
    return this.units * 10n ** BigInt(scale - this.scale);
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
    const den = BigInt(n) * 10n ** BigInt(scale - 2);
    let cents = abs / den;
    if (2n * (abs % den) >= den) cents += 1n;
    return new Decimal(num < 0n ? -cents : cents, 2);
  }

  /** The plain decimal text, without exponent or trailing zeros. */
  toString(): string {
    const neg = this.units < 0n;
    const digits = (neg ? -this.units : this.units).toString().padStart(this.scale + 1, "0");
    const whole = digits.slice(0, digits.length - this.scale);
    const frac = digits.slice(digits.length - this.scale).replace(/0+$/, "");
    const text = frac ? `${whole}.${frac}` : whole;
    return neg && text !== "0" ? `-${text}` : text;
  }
}
