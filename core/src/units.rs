//! Units at the boundary: human strings ("7B", "80GB", "24GiB") to exact integers,
//! and bytes to labelled display strings.
//!
//! Inside `calc-core` every size is an integer count of bytes (`u64`). GiB (2^30) and
//! GB (10^9) appear only here, at display, always with their label.

use serde::{Deserialize, Deserializer, de};
use std::fmt;

/// Bytes in one GiB (2^30).
pub const GIB: u64 = 1 << 30;
/// Bytes in one MiB (2^20).
pub const MIB: u64 = 1 << 20;
/// Bytes in one GB (10^9).
pub const GB: u64 = 1_000_000_000;

/// Parses a non-negative decimal number with an optional exponent exactly, as a
/// rational `mantissa / 10^scale` (mantissa up to 38 digits).
fn parse_decimal(s: &str) -> Option<(u128, i32)> {
    let s = s.trim();
    let (num, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    if num.is_empty() {
        return None;
    }
    let (int, frac) = match num.split_once('.') {
        Some((a, b)) => (a, b),
        None => (num, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    if digits.len() > 38 {
        return None;
    }
    let mantissa: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let scale = frac.len() as i32 - exp;
    Some((mantissa, scale))
}

/// Why a decimal is not a `u64`.
enum NotInteger {
    Fraction,
    TooLarge,
}

/// `mantissa / 10^scale * multiplier`, if it is a whole number that fits in `u64`.
fn exact_integer(mantissa: u128, scale: i32, multiplier: u128) -> Result<u64, NotInteger> {
    use NotInteger::*;
    if mantissa == 0 {
        return Ok(0);
    }
    if scale > 40 {
        return Err(Fraction);
    }
    if scale < -40 {
        return Err(TooLarge);
    }
    let v = mantissa.checked_mul(multiplier).ok_or(TooLarge)?;
    // 10^39 and 10^40 are past u128 (found by the hf_config fuzz target:
    // "00000.0000000000000000000000000000000000000001"): a non-zero value below 10^39 over
    // such a divisor is a fraction, and times it too large
    let r = if scale >= 0 {
        let d = 10u128.checked_pow(scale as u32).ok_or(Fraction)?;
        if v % d != 0 {
            return Err(Fraction);
        }
        v / d
    } else {
        let m = 10u128.checked_pow((-scale) as u32).ok_or(TooLarge)?;
        v.checked_mul(m).ok_or(TooLarge)?
    };
    u64::try_from(r).map_err(|_| TooLarge)
}

/// Parses a count such as `4`, `"4096"`, `"7B"`, `"1.5B"`, `"125M"`, `"32k"`, `"7e9"`,
/// `"70_000_000_000"`. Suffixes are decimal: K = 10^3, M = 10^6, B or G = 10^9,
/// T = 10^12 (case-insensitive). The result must be a whole number.
///
/// Errors: a message saying what was expected.
pub fn parse_count(s: &str) -> Result<u64, String> {
    let cleaned: String = s
        .trim()
        .chars()
        .filter(|c| *c != '_' && *c != ',' && *c != ' ')
        .collect();
    let err = || format!("expected a whole number such as 4096 or \"7B\", got {s:?}");
    if cleaned.starts_with('-') {
        return Err(format!("must not be negative, got {s:?}"));
    }
    let (num, mult): (&str, u128) = match cleaned.chars().last() {
        Some(c) if c.is_ascii_alphabetic() && !cleaned.ends_with(['e', 'E']) => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1_000,
                'M' => 1_000_000,
                'B' | 'G' => 1_000_000_000,
                'T' => 1_000_000_000_000,
                _ => return Err(err()),
            };
            (&cleaned[..cleaned.len() - 1], m)
        }
        _ => (&cleaned[..], 1),
    };
    let (m, scale) = parse_decimal(num).ok_or_else(err)?;
    exact_integer(m, scale, mult).map_err(|e| match e {
        NotInteger::Fraction => format!("expected a whole number, got {s:?}"),
        NotInteger::TooLarge => format!("{s:?} is too large (at most {})", u64::MAX),
    })
}

/// A memory size unit accepted in strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeUnit {
    Bytes,
    KB,
    MB,
    GB,
    TB,
    KiB,
    MiB,
    GiB,
    TiB,
}

impl SizeUnit {
    fn bytes(self) -> u128 {
        match self {
            SizeUnit::Bytes => 1,
            SizeUnit::KB => 1_000,
            SizeUnit::MB => 1_000_000,
            SizeUnit::GB => 1_000_000_000,
            SizeUnit::TB => 1_000_000_000_000,
            SizeUnit::KiB => 1 << 10,
            SizeUnit::MiB => 1 << 20,
            SizeUnit::GiB => 1 << 30,
            SizeUnit::TiB => 1 << 40,
        }
    }
}

/// Parses a memory size such as `"80GB"` (80 x 10^9 bytes), `"80 GiB"` (80 x 2^30),
/// `"24576MiB"`, `"1.5TB"`. A bare number is read in `default_unit`.
/// Units: B, KB, MB, GB, TB (powers of 10) and KiB, MiB, GiB, TiB (powers of 2).
///
/// Errors: a message saying what was expected.
pub fn parse_size(s: &str, default_unit: SizeUnit) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("must not be negative, got {s:?}"));
    }
    let split = t
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(t.len());
    let (num, unit) = (t[..split].trim(), t[split..].trim());
    let unit = match unit.to_ascii_lowercase().as_str() {
        "" => default_unit,
        "b" => SizeUnit::Bytes,
        "kb" | "k" => SizeUnit::KB,
        "mb" | "m" => SizeUnit::MB,
        "gb" | "g" => SizeUnit::GB,
        "tb" | "t" => SizeUnit::TB,
        "kib" => SizeUnit::KiB,
        "mib" => SizeUnit::MiB,
        "gib" => SizeUnit::GiB,
        "tib" => SizeUnit::TiB,
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {s:?}; use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB"
            ));
        }
    };
    let (m, scale) = parse_decimal(num)
        .ok_or_else(|| format!("expected a size such as \"80GB\" or \"80GiB\", got {s:?}"))?;
    // Round to whole bytes (a size like 0.1 KiB is not integral).
    let v = m
        .checked_mul(unit.bytes())
        .ok_or_else(|| format!("{s:?} is too large"))?;
    let r = if scale >= 0 {
        let d = 10u128
            .checked_pow(scale as u32)
            .ok_or_else(|| format!("{s:?} is out of range"))?;
        (v + d / 2) / d
    } else {
        v.checked_mul(
            10u128
                .checked_pow((-scale) as u32)
                .ok_or_else(|| format!("{s:?} is too large"))?,
        )
        .ok_or_else(|| format!("{s:?} is too large"))?
    };
    u64::try_from(r).map_err(|_| format!("{s:?} is too large"))
}

/// Bytes as GiB with two decimals and the label: `"12.55 GiB"`.
pub fn fmt_gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / GIB as f64)
}

/// Bytes as a memory field reads them back (`hardware.*_gb`): `"2048GiB"` for whole GiB,
/// else `"1234B"`.
pub fn fmt_gib_input(bytes: u64) -> String {
    if bytes.is_multiple_of(GIB) {
        format!("{}GiB", bytes / GIB)
    } else {
        format!("{bytes}B")
    }
}

/// Bytes as GB (10^9) with two decimals and the label: `"13.48 GB"`.
pub fn fmt_gb(bytes: u64) -> String {
    format!("{:.2} GB", bytes as f64 / GB as f64)
}

/// A count with a short decimal suffix: 6_738_415_616 -> `"6.74B"`.
pub fn fmt_count(n: u64) -> String {
    let f = n as f64;
    if n >= 1_000_000_000_000 {
        format!("{:.2}T", f / 1e12)
    } else if n >= 1_000_000_000 {
        format!("{:.2}B", f / 1e9)
    } else if n >= 1_000_000 {
        format!("{:.2}M", f / 1e6)
    } else if n >= 10_000 {
        format!("{:.1}K", f / 1e3)
    } else {
        n.to_string()
    }
}

/// An integer with thin thousands separators: 6738415616 -> `"6 738 415 616"`.
pub fn fmt_int(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// Serde helper: a count written as a JSON number or a string ("7B", "4096").
/// Used with `#[serde(deserialize_with = "units::de_count")]`.
pub fn de_count<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(CountVisitor)
}

/// Serde helper for `Option<u64>` counts (`null` is `None`).
pub fn de_opt_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    struct V;
    impl<'de> de::Visitor<'de> for V {
        type Value = Option<u64>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a whole number, a string such as \"7B\", or null")
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            de_count(d).map(Some)
        }
    }
    d.deserialize_option(V)
}

struct CountVisitor;

impl<'de> de::Visitor<'de> for CountVisitor {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a whole number such as 4096 or a string such as \"7B\"")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::custom(format!("must not be negative, got {v}")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19 {
            Ok(v as u64)
        } else if v < 0.0 {
            Err(E::custom(format!("must not be negative, got {v}")))
        } else if v.is_finite() && v.fract() == 0.0 {
            Err(E::custom(format!(
                "{v} is too large (at most {})",
                u64::MAX
            )))
        } else {
            Err(E::custom(format!("expected a whole number, got {v}")))
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        parse_count(v).map_err(E::custom)
    }
}

/// A memory size in bytes, written in JSON as a number of GB (10^9) or as a string with
/// a unit ("80GB", "80GiB"). Serialized as a number of bytes in [`SizeBytes`] form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GbInput(pub u64);

#[cfg(feature = "schema")]
impl schemars::JsonSchema for GbInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "GbInput".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [{"type": "number"}, {"type": "string"}],
            "description": "Memory size: a number of GB (10^9 bytes) or a string with a unit (\"80GB\", \"80GiB\")."
        })
    }
}

impl<'de> Deserialize<'de> for GbInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = GbInput;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size in GB such as 80, or a string such as \"80GB\" or \"80GiB\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<GbInput, E> {
                v.checked_mul(GB)
                    .map(GbInput)
                    .ok_or_else(|| E::custom(format!("{v} GB is too large")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<GbInput, E> {
                if v < 0 {
                    Err(E::custom(format!("must not be negative, got {v}")))
                } else {
                    self.visit_u64(v as u64)
                }
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<GbInput, E> {
                if !v.is_finite() || !(0.0..=1e9).contains(&v) {
                    return Err(E::custom(format!(
                        "must be a size from 0 to 10^9 GB, got {v}"
                    )));
                }
                Ok(GbInput((v * GB as f64).round() as u64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<GbInput, E> {
                parse_size(v, SizeUnit::GB).map(GbInput).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        // 40 decimals: 10^40 is past u128 (hf_config fuzz target)
        assert!(parse_count("00000.0000000000000000000000000000000000000001").is_err());
        assert!(parse_count("1e-39").is_err());
        assert_eq!(parse_count("1.000000000000000000000000000000"), Ok(1));
        assert_eq!(parse_count("7B"), Ok(7_000_000_000));
        assert_eq!(parse_count("1.5b"), Ok(1_500_000_000));
        assert_eq!(parse_count("125M"), Ok(125_000_000));
        assert_eq!(parse_count("32k"), Ok(32_000));
        assert_eq!(parse_count("7e9"), Ok(7_000_000_000));
        assert_eq!(parse_count("70_000"), Ok(70_000));
        assert_eq!(parse_count(" 4096 "), Ok(4096));
        assert!(parse_count("1.5").is_err());
        assert!(parse_count("-3").unwrap_err().contains("negative"));
        assert!(parse_count("abc").is_err());
        assert!(parse_count("1e30").is_err());
        assert!(parse_count("").is_err());
        assert!(parse_count("7X").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("80GB", SizeUnit::GB), Ok(80_000_000_000));
        assert_eq!(parse_size("80 GiB", SizeUnit::GB), Ok(80 * GIB));
        assert_eq!(parse_size("80", SizeUnit::GB), Ok(80_000_000_000));
        assert_eq!(parse_size("24564MiB", SizeUnit::GB), Ok(24564 * MIB));
        assert_eq!(parse_size("1.5TB", SizeUnit::GB), Ok(1_500_000_000_000));
        assert!(parse_size("80 parsecs", SizeUnit::GB).is_err());
        assert!(parse_size("-1GB", SizeUnit::GB).is_err());
        assert!(parse_size("1e40GB", SizeUnit::GB).is_err());
    }

    #[test]
    fn display() {
        assert_eq!(fmt_gib(13_476_839_424), "12.55 GiB");
        assert_eq!(fmt_gb(13_476_839_424), "13.48 GB");
        assert_eq!(fmt_count(6_738_415_616), "6.74B");
        assert_eq!(fmt_int(6_738_415_616), "6 738 415 616");
    }
}
