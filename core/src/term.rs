//! Memory terms: every number the model computes is an [`Expr`] whose value *is* the
//! bytes and whose rendering is the formula with its numbers substituted, so that the
//! formula a user reads cannot disagree with the bytes beside it (Megatron-LM's
//! `theoretical_memory_usage.py` keeps the comment and the arithmetic on one line; here they
//! are one value). A [`Term`] adds the source (paper, framework file) of the formula.
//!
//! The estimators are written once, generic over [`Num`], and run two ways: with [`Expr`]
//! for the report, and with [`Value`] (the value alone: no formula, no text, no allocation)
//! for the numeric path, [`crate::estimate_peak`], which the plan search and the solvers
//! run per candidate. Inside a generic estimator, `n` and `bytes` are bound to the number
//! type's constructors (`let (n, bytes) = (N::n, N::bytes);`), so a formula reads the same
//! in either.
//!
//! Arithmetic is exact: rationals with 128-bit numerators and 64-bit denominators, with
//! `ceil(..)` and `floor(..)` where the code rounds. A float appears only where the model
//! multiplies by a user's fraction (`gpu_memory_utilization`, `allocator_reserve_fraction`);
//! it is written with a decimal point and, from there on, the expression is evaluated in
//! `f64` left to right, as the Rust code it replaces was.
//!
//! The rendered grammar (checked by `core/tests/terms.rs`, which evaluates every formula of
//! every estimate with its own parser):
//!
//! ```text
//! expr   := term (('+' | '−') term)*
//! term   := factor (('×' | '/') factor)*
//! factor := number label | '(' expr ')' label | ('ceil'|'floor'|'max'|'min') '(' expr (',' expr)* ')'
//! label  := words that start with a letter (ignored by the arithmetic)
//! ```

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::cmp::Ordering;

/// A label after a number (`"params"`, `"B"`): words that start with a letter.
pub type Label = &'static str;

/// The value of an expression: an exact rational `n / d` (`d > 0`, reduced; `n` in 128
/// bits, `d` in 64), or an `f64`.
///
/// Stored in 24 bytes without a tag (the estimate moves values by the thousand): an exact
/// rational keeps `d > 0`, and `d == 0` marks a float whose bits `n` holds. Numerators
/// need 128 bits (a product of a parameter count and a byte count over 2^63 before the
/// division that brings it back); denominators are ranks, parameter counts and their
/// products, and a quotient whose reduced denominator does not fit 64 bits becomes the
/// float nearest to it, as an overflowing exact operation always did.
#[derive(Clone, Copy)]
#[repr(C, packed(8))] // 8-byte aligned: 24 bytes, an expression 40 with its formula
pub struct Value {
    n: i128,
    d: i64,
}

/// A [`Value`] taken apart.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Exact(i128, i64),
    Float(f64),
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.kind().fmt(f)
    }
}

impl PartialEq for Value {
    fn eq(&self, o: &Value) -> bool {
        self.kind() == o.kind()
    }
}

/// Euclid's algorithm on 64-bit magnitudes, at least 1.
fn gcd_u64(mut x: u64, mut y: u64) -> u64 {
    while y != 0 {
        (x, y) = (y, x % y);
    }
    x.max(1)
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    // nearly every value fits 64 bits, where division is a single instruction
    if let (Ok(x), Ok(y)) = (u64::try_from(a), u64::try_from(b)) {
        return i128::from(gcd_u64(x, y));
    }
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// [`gcd`] of 64-bit operands (at least 1). The one gcd that does not fit, 2^63 (of
/// `i64::MIN` and 0 or itself), gives 1: still a common divisor, and [`Value::ratio`]
/// reduces what it divided.
fn gcd64(a: i64, b: i64) -> i64 {
    i64::try_from(gcd_u64(a.unsigned_abs(), b.unsigned_abs())).unwrap_or(1)
}

/// `n.div_euclid(d)` (`d > 0`), in 64 bits when `n` fits.
fn div_euclid(n: i128, d: i64) -> i128 {
    match i64::try_from(n) {
        Ok(n) => i128::from(n.div_euclid(d)),
        _ => n.div_euclid(i128::from(d)),
    }
}

impl Value {
    /// The whole number `n`.
    const fn int(n: i128) -> Value {
        Value { n, d: 1 }
    }
    /// The float `f`.
    fn float(f: f64) -> Value {
        Value {
            n: i128::from(f.to_bits()),
            d: 0,
        }
    }
    #[inline]
    fn kind(self) -> Kind {
        if self.d == 0 {
            Kind::Float(f64::from_bits(self.n as u64))
        } else {
            Kind::Exact(self.n, self.d)
        }
    }
    /// `true` for a whole number (an exact value with denominator 1).
    #[inline]
    fn is_int(self) -> bool {
        self.d == 1
    }
    /// `n / d` reduced: exact when the reduced denominator fits 64 bits, else the nearest
    /// float.
    fn ratio(n: i128, d: i128) -> Value {
        if d == 0 {
            return Value::float(f64::NAN);
        }
        if d == 1 {
            return Value::int(n);
        }
        let (n, d) = if d < 0 { (-n, -d) } else { (n, d) };
        // an exact quotient (most byte counts over ranks): one 64-bit division, no gcd
        if let (Ok(n), Ok(d)) = (i64::try_from(n), i64::try_from(d))
            && n % d == 0
        {
            return Value::int(i128::from(n / d));
        }
        let g = gcd(n, d);
        let (n, d) = match (i64::try_from(n), i64::try_from(d), i64::try_from(g)) {
            (Ok(n), Ok(d), Ok(g)) => (i128::from(n / g), i128::from(d / g)),
            _ => (n / g, d / g),
        };
        match i64::try_from(d) {
            Ok(d) => Value { n, d },
            Err(_) => Value::float(n as f64 / d as f64),
        }
    }
    /// The value as an `f64`.
    pub fn to_f64(self) -> f64 {
        match self.kind() {
            Kind::Exact(n, d) => n as f64 / d as f64,
            Kind::Float(f) => f,
        }
    }
    fn exact2(self, o: Value) -> Option<(i128, i128, i128, i128)> {
        (self.d != 0 && o.d != 0).then_some((self.n, i128::from(self.d), o.n, i128::from(o.d)))
    }
    /// Both whole numbers that fit 64 bits (nearly every value), widened: their sum and
    /// product cannot overflow an i128 (one add, one widening multiply).
    #[inline]
    fn small_ints(self, o: Value) -> Option<(i128, i128)> {
        if self.is_int()
            && o.is_int()
            && let (Ok(x), Ok(y)) = (i64::try_from(self.n), i64::try_from(o.n))
        {
            return Some((i128::from(x), i128::from(y)));
        }
        None
    }
    #[inline]
    fn add_value(self, o: Value) -> Value {
        // no common denominator to find
        match self.small_ints(o) {
            Some((x, y)) => Value::int(x + y),
            None => self.add_general(o),
        }
    }
    #[inline(never)]
    fn add_general(self, o: Value) -> Value {
        if self.is_int() && o.is_int() {
            let (a, c) = (self.n, o.n);
            if let Some(s) = a.checked_add(c) {
                return Value::int(s);
            }
        }
        self.exact2(o)
            .and_then(|(a, b, c, d)| {
                let n = a.checked_mul(d)?.checked_add(c.checked_mul(b)?)?;
                Some(Value::ratio(n, b.checked_mul(d)?))
            })
            .unwrap_or_else(|| Value::float(self.to_f64() + o.to_f64()))
    }
    fn sub_value(self, o: Value) -> Value {
        self.add_value(o.neg())
    }
    fn neg(self) -> Value {
        match self.kind() {
            Kind::Exact(n, d) => Value { n: -n, d },
            Kind::Float(f) => Value::float(-f),
        }
    }
    #[inline]
    fn mul_value(self, o: Value) -> Value {
        match self.small_ints(o) {
            Some((x, y)) => Value::int(x * y),
            None => self.mul_general(o),
        }
    }
    #[inline(never)]
    fn mul_general(self, o: Value) -> Value {
        if self.is_int() && o.is_int() {
            let (a, c) = (self.n, o.n);
            if let Some(p) = a.checked_mul(c) {
                return Value::int(p);
            }
        }
        self.exact2(o)
            .and_then(|(a, b, c, d)| {
                // 64-bit operands (nearly every fraction): divide in 64 bits, not i128's
                // software division; the same quotients
                if let (Ok(a), Ok(b), Ok(c), Ok(d)) = (
                    i64::try_from(a),
                    i64::try_from(b),
                    i64::try_from(c),
                    i64::try_from(d),
                ) {
                    let (g1, g2) = (gcd64(a, d), gcd64(c, b));
                    let n = i128::from(a / g1) * i128::from(c / g2);
                    return Some(Value::ratio(n, i128::from(b / g2) * i128::from(d / g1)));
                }
                let (g1, g2) = (gcd(a, d), gcd(c, b));
                let n = (a / g1).checked_mul(c / g2)?;
                Some(Value::ratio(n, (b / g2).checked_mul(d / g1)?))
            })
            .unwrap_or_else(|| Value::float(self.to_f64() * o.to_f64()))
    }
    fn div_value(self, o: Value) -> Value {
        match o.kind() {
            Kind::Exact(0, _) => Value::float(f64::NAN),
            // a whole number over a whole number (nearly every quotient): one gcd, as
            // `self × 1/c` reduces it
            Kind::Exact(c, 1) if self.is_int() => Value::ratio(self.n, c),
            Kind::Exact(c, d) => self.mul_value(Value::ratio(i128::from(d), c)),
            Kind::Float(f) => Value::float(self.to_f64() / f),
        }
    }
    /// `ceil(self / d)` (or `floor`) of two whole numbers that fit 64 bits, `d > 0`: the
    /// value [`Value::div`] then [`Value::ceil`] / [`Value::floor`] give, by one 64-bit
    /// division instead of a reduced fraction (no gcd); `None` otherwise.
    #[inline]
    fn whole_div(self, d: Value, ceil: bool) -> Option<Value> {
        let (n, d) = self.small_ints(d)?;
        if d <= 0 {
            return None;
        }
        // both fit 64 bits (`small_ints`), `d > 0`: the truncated quotient cannot overflow,
        // and the remainder's sign tells which way to round it
        let (n, d) = (n as i64, d as i64);
        let (q, r) = (n / d, n % d);
        Some(Value::int(i128::from(if ceil {
            q + i64::from(r > 0)
        } else {
            q - i64::from(r < 0)
        })))
    }
    fn floor(self) -> Value {
        match self.kind() {
            Kind::Exact(n, d) => Value::int(div_euclid(n, d)),
            Kind::Float(f) => Value::int(f.floor() as i128),
        }
    }
    fn ceil(self) -> Value {
        match self.kind() {
            Kind::Exact(n, d) => Value::int(-div_euclid(-n, d)),
            Kind::Float(f) => Value::int(f.ceil() as i128),
        }
    }
    fn cmp(self, o: Value) -> Ordering {
        self.exact2(o)
            .and_then(|(a, b, c, d)| Some(a.checked_mul(d)?.cmp(&c.checked_mul(b)?)))
            .unwrap_or_else(|| self.to_f64().total_cmp(&o.to_f64()))
    }
    #[inline]
    fn is_zero(self) -> bool {
        if self.d != 0 {
            return self.n == 0;
        }
        match self.kind() {
            Kind::Exact(n, _) => n == 0,
            Kind::Float(f) => f == 0.0,
        }
    }
    /// The value as whole bytes: exact integers as they are; anything else (a fraction, a
    /// float, a negative number) is a bug in the formula, caught by the tests, and truncated
    /// toward zero here so that no input can make it panic.
    #[inline]
    pub fn to_u64(self) -> u64 {
        // a whole number that fits 64 bits (nearly every byte count): no float
        if self.d == 1
            && let Ok(v) = u64::try_from(self.n)
        {
            return v;
        }
        self.to_u64_general()
    }
    #[inline(never)]
    fn to_u64_general(self) -> u64 {
        match self.kind() {
            Kind::Exact(n, 1) if n >= 0 => u64::try_from(n).unwrap_or(u64::MAX),
            _ => {
                let f = self.to_f64();
                if f.is_finite() && f > 0.0 {
                    f as u64
                } else {
                    0
                }
            }
        }
    }
    /// The value as signed whole bytes (vLLM's KV-cache budget may be negative).
    pub fn to_i64(self) -> i64 {
        match self.kind() {
            Kind::Exact(n, 1) => {
                i64::try_from(n).unwrap_or(if n < 0 { i64::MIN } else { i64::MAX })
            }
            _ => {
                let f = self.to_f64();
                if f.is_finite() { f as i64 } else { 0 }
            }
        }
    }
}

/// An expression's formula: a number, or a composite (boxed, so that an expression stays
/// small: the estimate moves them by the hundred). 16 bytes: the composite's box sits beside
/// the label's pointer, whose null value tells them apart.
#[derive(Debug, Clone)]
enum Repr {
    /// A labelled number; a float (a user's fraction, [`f`]) is written with a decimal
    /// point.
    Num(Label),
    Node(Box<Node>),
}

#[derive(Debug, Clone)]
enum Node {
    Sum(Vec<Expr>),
    Prod(Vec<Expr>),
    Sub(Box<Expr>, Box<Expr>),
    Div(Box<Expr>, Box<Expr>),
    Ceil(Box<Expr>),
    Floor(Box<Expr>),
    Max(Vec<Expr>),
    Min(Vec<Expr>),
    Group(Box<Expr>, Label),
}

/// A number type the estimators compute with, the one formula code run two ways: [`Expr`]
/// for the report (each number's value and its formula with the numbers substituted) and
/// [`Value`] for the numeric path (the value alone: the plan search's and the solvers'
/// per-candidate estimate, [`crate::estimate_peak`]). Both compute the same [`Value`]
/// arithmetic in the same order, so they agree to the byte (`core/tests/numeric.rs` checks
/// every preset x engine x mode); [`Value`] builds no formula, allocates nothing and is
/// `Copy`.
///
/// Values are the same because exact rationals are associative (a product or sum of
/// composites folds the same whether or not the report flattens its children), and a
/// float factor (a user's fraction) only ever ends a product, whose fold order is then the
/// same either way.
pub trait Num:
    Clone
    + std::fmt::Debug
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
{
    /// `true` for [`Expr`]: terms keep their formula and source, phases their terms, and
    /// the estimate's warnings and messages are written. `false` for [`Value`], whose
    /// estimate formats no text.
    const REPORT: bool;
    /// A term's source text: the text for [`Expr`], nothing for [`Value`] ([`NoText`]).
    type Source: Clone + std::fmt::Debug + std::fmt::Display;
    /// The source text as this number type keeps it.
    fn source(text: Cow<'static, str>) -> Self::Source;
    /// Both sources of a sum of two terms: the non-zero terms' (see `Term`'s `+`).
    fn join(a: Self::Source, b: Self::Source, a_zero: bool, b_zero: bool) -> Self::Source;
    /// A whole number with a label: `n(4, "B")` renders `4 B`.
    fn n(v: u64, label: Label) -> Self;
    /// A fraction or factor given as a float (`0.9`), rendered with a decimal point.
    fn f(v: f64, label: Label) -> Self;
    /// A byte count: `bytes(2)` renders `2 B`.
    fn bytes(v: u64) -> Self {
        Self::n(v, "B")
    }
    /// Zero bytes (an absent term).
    fn zero() -> Self;
    /// The value.
    fn value(&self) -> Value;
    /// The value as whole bytes (see [`Value::to_u64`]).
    fn to_u64(&self) -> u64;
    /// `true` when the value is zero.
    fn is_zero(&self) -> bool;
    /// The sum of `terms`; zero-valued terms are left out of the formula.
    fn sum(terms: impl IntoIterator<Item = Self>) -> Self;
    /// The product of `factors`, evaluated left to right.
    fn product(factors: impl IntoIterator<Item = Self>) -> Self;
    /// `self − other` (exact; may be negative).
    fn minus(self, other: Self) -> Self;
    /// `self / d` (exact).
    fn over(self, d: Self) -> Self;
    /// `ceil(self / d)` (`u64::div_ceil`); no division is written when `d` is 1, and no
    /// rounding when the division is exact.
    fn div_ceil(self, d: Self) -> Self;
    /// `floor(self / d)` (integer division); written like [`Num::div_ceil`].
    fn div_floor(self, d: Self) -> Self;
    /// `floor(self)` (a float product truncated to bytes, `as u64`).
    fn floor(self) -> Self;
    /// `max(a, b, ...)`; zero for none.
    fn max(terms: impl IntoIterator<Item = Self>) -> Self;
    /// `min(a, b, ...)`; zero for none.
    fn min(terms: impl IntoIterator<Item = Self>) -> Self;
    /// `(self) label`: names a sub-expression.
    fn label(self, label: Label) -> Self;
}

/// A term's source text from `format!` arguments for the number type `N` ([`Num`]),
/// formatted only where `N` reports ([`Num::REPORT`]; a numeric estimate reports no text,
/// so it builds none): a `Cow<'static, str>`, empty on the numeric path.
macro_rules! source {
    ($num:ty; $($arg:tt)*) => {
        if <$num as $crate::term::Num>::REPORT {
            ::std::borrow::Cow::<'static, str>::Owned(format!($($arg)*))
        } else {
            ::std::borrow::Cow::<'static, str>::Borrowed("")
        }
    };
}
pub(crate) use source;

/// An arithmetic expression over labelled numbers; its value is computed as it is built.
/// The report's number type ([`Num`]).
#[derive(Debug, Clone)]
pub struct Expr {
    value: Value,
    node: Repr,
}

// a 24-byte value and a 16-byte formula (64-bit targets)
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Expr>() == 40);

/// A whole number with a label: `n(4, "B")` renders `4 B`.
pub fn n(v: u64, label: Label) -> Expr {
    Expr::num(Value::int(i128::from(v)), label)
}

/// A fraction or factor given as a float (`0.9`), rendered with a decimal point.
pub fn f(v: f64, label: Label) -> Expr {
    Expr::num(Value::float(v), label)
}

/// A byte count: `bytes(2)` renders `2 B`.
pub fn bytes(v: u64) -> Expr {
    n(v, "B")
}

impl Expr {
    /// Zero bytes (an absent term).
    pub fn zero() -> Expr {
        n(0, "")
    }
    fn with(value: Value, node: Node) -> Expr {
        Expr {
            value,
            node: Repr::Node(Box::new(node)),
        }
    }
    /// A labelled number.
    fn num(value: Value, label: Label) -> Expr {
        Expr {
            value,
            node: Repr::Num(label),
        }
    }
    /// The value.
    pub fn value(&self) -> Value {
        self.value
    }
    /// The value as whole bytes (see [`Value::to_u64`]).
    pub fn bytes(&self) -> u64 {
        self.value.to_u64()
    }
    /// `true` when the value is zero.
    pub fn is_zero(&self) -> bool {
        self.value.is_zero()
    }
    /// The sum of `terms`; zero-valued terms are left out of the formula.
    pub fn sum(terms: impl IntoIterator<Item = Expr>) -> Expr {
        let mut parts = Vec::new();
        for t in terms {
            if t.is_zero() {
                continue;
            }
            match t.node {
                Repr::Node(b) if matches!(*b, Node::Sum(_)) => {
                    if let Node::Sum(v) = *b {
                        parts.extend(v)
                    }
                }
                node => parts.push(Expr { node, ..t }),
            }
        }
        match parts.len() {
            0 => Expr::zero(),
            1 => parts.pop().unwrap_or_else(Expr::zero),
            _ => Expr::with(
                parts
                    .iter()
                    .fold(Value::int(0), |a, t| a.add_value(t.value)),
                Node::Sum(parts),
            ),
        }
    }
    /// The product of `factors`, evaluated left to right.
    pub fn product(factors: impl IntoIterator<Item = Expr>) -> Expr {
        let mut parts = Vec::new();
        for t in factors {
            match t.node {
                Repr::Node(b) if matches!(*b, Node::Prod(_)) => {
                    if let Node::Prod(v) = *b {
                        parts.extend(v)
                    }
                }
                node => parts.push(Expr { node, ..t }),
            }
        }
        match parts.len() {
            0 => n(1, ""),
            1 => parts.pop().unwrap_or_else(Expr::zero),
            _ => Expr::with(
                parts
                    .iter()
                    .skip(1)
                    .fold(parts[0].value, |a, t| a.mul_value(t.value)),
                Node::Prod(parts),
            ),
        }
    }
    /// `self − other` (exact; may be negative).
    pub fn minus(self, other: Expr) -> Expr {
        if other.is_zero() {
            return self;
        }
        Expr::with(
            self.value.sub_value(other.value),
            Node::Sub(Box::new(self), Box::new(other)),
        )
    }
    /// `self / d` (exact).
    pub fn over(self, d: Expr) -> Expr {
        Expr::with(
            self.value.div_value(d.value),
            Node::Div(Box::new(self), Box::new(d)),
        )
    }
    /// `ceil(self / d)` (`u64::div_ceil`); no division is written when `d` is 1, and no
    /// rounding when the division is exact.
    pub fn div_ceil(self, d: Expr) -> Expr {
        self.over(d).rounded(Value::ceil, Node::Ceil)
    }
    /// `floor(self / d)` (integer division); written like [`Expr::div_ceil`].
    pub fn div_floor(self, d: Expr) -> Expr {
        self.over(d).rounded(Value::floor, Node::Floor)
    }
    /// The quotient `self` rounded (nothing written when it is whole; a division by 1 is
    /// the dividend itself).
    fn rounded(self, round: fn(Value) -> Value, node: fn(Box<Expr>) -> Node) -> Expr {
        let q = match self.node {
            Repr::Node(b) if matches!(&*b, Node::Div(_, d) if d.value == Value::int(1)) => {
                let Node::Div(a, _) = *b else { unreachable!() };
                return *a;
            }
            node => Expr { node, ..self },
        };
        if q.value.is_int() {
            return q;
        }
        Expr::with(round(q.value), node(Box::new(q)))
    }
    /// `floor(self)` (a float product truncated to bytes, `as u64`).
    pub fn floor(self) -> Expr {
        self.rounded(Value::floor, Node::Floor)
    }
    fn extreme(terms: impl IntoIterator<Item = Expr>, want: Ordering, max: bool) -> Expr {
        let mut terms: Vec<Expr> = terms.into_iter().collect();
        if terms.len() <= 1 {
            return terms.pop().unwrap_or_else(Expr::zero);
        }
        let value = terms
            .iter()
            .skip(1)
            .fold(terms[0].value, |a, t| pick(a, t.value, want));
        Expr::with(
            value,
            if max {
                Node::Max(terms)
            } else {
                Node::Min(terms)
            },
        )
    }
    /// `max(a, b, ...)`.
    pub fn max(terms: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::extreme(terms, Ordering::Greater, true)
    }
    /// `min(a, b, ...)`.
    pub fn min(terms: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::extreme(terms, Ordering::Less, false)
    }
    /// `(self) label`: names a sub-expression.
    pub fn label(self, label: Label) -> Expr {
        Expr::with(self.value, Node::Group(Box::new(self), label))
    }
    /// The composite node, if the expression is one.
    fn tree(&self) -> Option<&Node> {
        match &self.node {
            Repr::Node(b) => Some(b),
            _ => None,
        }
    }
    fn is_additive(&self) -> bool {
        matches!(self.tree(), Some(Node::Sum(_) | Node::Sub(..)))
    }
    fn is_atom(&self) -> bool {
        matches!(self.node, Repr::Num(_))
            || matches!(
                self.tree(),
                Some(
                    Node::Ceil(_) | Node::Floor(_) | Node::Max(_) | Node::Min(_) | Node::Group(..)
                )
            )
    }
    fn write_child(&self, out: &mut String, parens: bool) {
        if parens {
            out.push('(');
            self.write(out);
            out.push(')');
        } else {
            self.write(out);
        }
    }
    fn write(&self, out: &mut String) {
        use std::fmt::Write;
        let node = match &self.node {
            Repr::Node(node) => node,
            Repr::Num(label) => {
                match self.value.kind() {
                    Kind::Float(v) if v.fract() == 0.0 && v.abs() < 1e15 => {
                        let _ = write!(out, "{v:.1}");
                    }
                    Kind::Float(v) => {
                        let _ = write!(out, "{v}");
                    }
                    Kind::Exact(v, _) => {
                        let _ = write!(out, "{v}");
                    }
                }
                if !label.is_empty() {
                    out.push(' ');
                    out.push_str(label);
                }
                return;
            }
        };
        match &**node {
            Node::Sum(v) => {
                for (i, t) in v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" + ");
                    }
                    t.write_child(out, i > 0 && matches!(t.tree(), Some(Node::Sub(..))));
                }
            }
            Node::Prod(v) => {
                for (i, t) in v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" × ");
                    }
                    // a float quotient is evaluated where it stands (f64 is not associative)
                    let float_div = matches!(t.tree(), Some(Node::Div(..)))
                        && matches!(t.value.kind(), Kind::Float(_));
                    t.write_child(out, t.is_additive() || (i > 0 && float_div));
                }
            }
            Node::Sub(a, b) => {
                a.write(out);
                out.push_str(" − ");
                b.write_child(out, b.is_additive());
            }
            Node::Div(a, b) => {
                a.write_child(out, a.is_additive());
                out.push_str(" / ");
                b.write_child(out, !b.is_atom());
            }
            Node::Ceil(a) | Node::Floor(a) => {
                out.push_str(if matches!(**node, Node::Ceil(_)) {
                    "ceil("
                } else {
                    "floor("
                });
                a.write(out);
                out.push(')');
            }
            Node::Max(v) | Node::Min(v) => {
                out.push_str(if matches!(**node, Node::Max(_)) {
                    "max("
                } else {
                    "min("
                });
                for (i, t) in v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    t.write(out);
                }
                out.push(')');
            }
            Node::Group(a, label) => {
                out.push('(');
                a.write(out);
                out.push(')');
                if !label.is_empty() {
                    out.push(' ');
                    out.push_str(label);
                }
            }
        }
    }
    /// The formula, numbers substituted (grammar in the module docs).
    pub fn render(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }
}

impl std::ops::Add for Expr {
    type Output = Expr;
    fn add(self, o: Expr) -> Expr {
        Expr::sum([self, o])
    }
}

impl std::ops::Sub for Expr {
    type Output = Expr;
    fn sub(self, o: Expr) -> Expr {
        self.minus(o)
    }
}

impl std::ops::Mul for Expr {
    type Output = Expr;
    fn mul(self, o: Expr) -> Expr {
        Expr::product([self, o])
    }
}

/// The later of two values `a`, `t` in the fold of `max` (`want` Greater) or `min` (Less).
fn pick(a: Value, t: Value, want: Ordering) -> Value {
    if t.cmp(a) == want { t } else { a }
}

impl Num for Expr {
    const REPORT: bool = true;
    type Source = Cow<'static, str>;
    fn source(text: Cow<'static, str>) -> Cow<'static, str> {
        text
    }
    fn join(a: Self::Source, b: Self::Source, a_zero: bool, b_zero: bool) -> Self::Source {
        match (a_zero, b_zero) {
            (_, true) => a,
            (true, false) => b,
            _ if a == b => a,
            _ => format!("{a}; {b}").into(),
        }
    }
    fn n(v: u64, label: Label) -> Expr {
        n(v, label)
    }
    fn f(v: f64, label: Label) -> Expr {
        f(v, label)
    }
    fn zero() -> Expr {
        Expr::zero()
    }
    fn value(&self) -> Value {
        self.value
    }
    fn to_u64(&self) -> u64 {
        self.value.to_u64()
    }
    fn is_zero(&self) -> bool {
        self.value.is_zero()
    }
    fn sum(terms: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::sum(terms)
    }
    fn product(factors: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::product(factors)
    }
    fn minus(self, other: Expr) -> Expr {
        Expr::minus(self, other)
    }
    fn over(self, d: Expr) -> Expr {
        Expr::over(self, d)
    }
    fn div_ceil(self, d: Expr) -> Expr {
        Expr::div_ceil(self, d)
    }
    fn div_floor(self, d: Expr) -> Expr {
        Expr::div_floor(self, d)
    }
    fn floor(self) -> Expr {
        Expr::floor(self)
    }
    fn max(terms: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::max(terms)
    }
    fn min(terms: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::min(terms)
    }
    fn label(self, label: Label) -> Expr {
        Expr::label(self, label)
    }
}

/// The numeric path's number: the value of the expression the report would build, by the
/// same operations in the same order, where `+` and `−` leave a zero operand out as the
/// report's sums do, a quotient by 1 is its dividend and a whole quotient is not rounded.
impl Num for Value {
    const REPORT: bool = false;
    type Source = NoText;
    #[inline(always)]
    fn source(_: Cow<'static, str>) -> NoText {
        NoText
    }
    #[inline(always)]
    fn join(_: NoText, _: NoText, _: bool, _: bool) -> NoText {
        NoText
    }
    #[inline(always)]
    fn n(v: u64, _: Label) -> Value {
        Value::int(i128::from(v))
    }
    #[inline(always)]
    fn f(v: f64, _: Label) -> Value {
        Value::float(v)
    }
    #[inline(always)]
    fn zero() -> Value {
        Value::int(0)
    }
    #[inline(always)]
    fn value(&self) -> Value {
        *self
    }
    #[inline(always)]
    fn to_u64(&self) -> u64 {
        Value::to_u64(*self)
    }
    #[inline(always)]
    fn is_zero(&self) -> bool {
        Value::is_zero(*self)
    }
    #[inline]
    fn sum(terms: impl IntoIterator<Item = Value>) -> Value {
        terms.into_iter().fold(Value::int(0), |a, t| a + t)
    }
    #[inline]
    fn product(factors: impl IntoIterator<Item = Value>) -> Value {
        factors
            .into_iter()
            .reduce(Value::mul_value)
            .unwrap_or(Value::int(1))
    }
    #[inline]
    fn minus(self, other: Value) -> Value {
        if other.is_zero() {
            return self;
        }
        self.sub_value(other)
    }
    #[inline]
    fn over(self, d: Value) -> Value {
        if d == Value::int(1) {
            return self;
        }
        self.div_value(d)
    }
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    fn div_ceil(self, d: Value) -> Value {
        match self.whole_div(d, true) {
            Some(q) => q,
            None => self.over(d).rounded(Value::ceil),
        }
    }
    #[cfg_attr(not(target_arch = "wasm32"), inline(always))]
    fn div_floor(self, d: Value) -> Value {
        match self.whole_div(d, false) {
            Some(q) => q,
            None => self.over(d).rounded(Value::floor),
        }
    }
    #[inline]
    fn floor(self) -> Value {
        self.rounded(Value::floor)
    }
    #[inline]
    fn max(terms: impl IntoIterator<Item = Value>) -> Value {
        Value::extreme(terms, Ordering::Greater)
    }
    #[inline]
    fn min(terms: impl IntoIterator<Item = Value>) -> Value {
        Value::extreme(terms, Ordering::Less)
    }
    #[inline(always)]
    fn label(self, _: Label) -> Value {
        self
    }
}

impl Value {
    /// A quotient rounded as the report rounds it ([`Expr`]'s `rounded`): a whole number
    /// as it is, else by `round`.
    #[inline]
    fn rounded(self, round: fn(Value) -> Value) -> Value {
        if self.is_int() { self } else { round(self) }
    }
    /// The fold of [`Num::max`] (`want` Greater) or [`Num::min`] (Less); zero for none.
    fn extreme(terms: impl IntoIterator<Item = Value>, want: Ordering) -> Value {
        let mut terms = terms.into_iter();
        match terms.next() {
            None => Value::int(0),
            Some(first) => terms.fold(first, |a, t| pick(a, t, want)),
        }
    }
}

impl std::ops::Add for Value {
    type Output = Value;
    /// The sum as the report's `+` computes it: a zero operand drops out.
    #[inline(always)]
    fn add(self, o: Value) -> Value {
        match (self.is_zero(), o.is_zero()) {
            (_, true) => self,
            (true, false) => o,
            _ => self.add_value(o),
        }
    }
}

impl std::ops::Sub for Value {
    type Output = Value;
    #[inline(always)]
    fn sub(self, o: Value) -> Value {
        Num::minus(self, o)
    }
}

impl std::ops::Mul for Value {
    type Output = Value;
    #[inline(always)]
    fn mul(self, o: Value) -> Value {
        self.mul_value(o)
    }
}

/// The numeric path's source text: none (a numeric estimate formats no text; written
/// empty where a report's source would quote it).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoText;

impl std::fmt::Display for NoText {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Ok(())
    }
}

/// A memory term: its expression (bytes and formula in one) and the source of the formula,
/// for the number type `N` ([`Num`]: the report's [`Expr`] and source text, or the numeric
/// path's [`Value`] and no text).
#[derive(Debug, Clone)]
pub struct Term<N: Num = Expr> {
    pub expr: N,
    pub source: N::Source,
}

impl<N: Num> Term<N> {
    /// A term computed by `expr`, from `source`.
    #[inline]
    pub fn new(expr: N, source: impl Into<Cow<'static, str>>) -> Term<N> {
        Term {
            expr,
            source: N::source(source.into()),
        }
    }
    /// No memory.
    #[inline]
    pub fn zero() -> Term<N> {
        Term::new(N::zero(), "")
    }
    /// The term's bytes.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.expr.to_u64()
    }
    #[inline]
    pub fn is_zero(&self) -> bool {
        self.expr.is_zero()
    }
}

impl Term {
    /// The term as reported: name, bytes, formula and source.
    pub fn detail(&self, name: &str) -> ComponentDetail {
        ComponentDetail {
            name: name.to_string(),
            bytes: self.bytes(),
            formula: self.expr.render(),
            source: self.source.to_string(),
        }
    }
}

impl<N: Num> std::ops::Add for Term<N> {
    type Output = Term<N>;
    /// Both terms' memory; the sources of the non-zero ones, joined.
    fn add(self, o: Term<N>) -> Term<N> {
        let (a_zero, b_zero) = (self.is_zero(), o.is_zero());
        Term {
            source: N::join(self.source, o.source, a_zero, b_zero),
            expr: self.expr + o.expr,
        }
    }
}

/// One memory term as the estimate reports it (API boundary): the component or overhead it
/// explains, its bytes, its formula with the numbers substituted (which evaluates to
/// `bytes`; see [`crate::term`] for the grammar) and the source of the formula.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ComponentDetail {
    pub name: String,
    pub bytes: u64,
    pub formula: String,
    pub source: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_and_formula_are_one() {
        // ZeRO-3 weights: 2 B x ceil((6738415616 - 266240) / 8) + 2 B x 266240
        let e = (bytes(2) * (n(6_738_415_616, "params") - n(266_240, "persistent params")))
            .div_ceil(n(8, "ranks"))
            + bytes(2) * n(266_240, "persistent params");
        assert_eq!(
            e.bytes(),
            (2 * (6_738_415_616u64 - 266_240)).div_ceil(8) + 2 * 266_240
        );
        assert_eq!(
            e.render(),
            "2 B × (6738415616 params − 266240 persistent params) / 8 ranks + 2 B × 266240 persistent params"
        );
        // ceil only where the division is not exact
        let c = (bytes(2) * n(7, "params")).div_ceil(n(4, "ranks"));
        assert_eq!(c.bytes(), 4);
        assert_eq!(c.render(), "ceil(2 B × 7 params / 4 ranks)");
        // a float factor truncated to bytes, as `(x as f64 * 0.9) as u64`
        let b = (n(85_899_345_920, "B") * f(0.9, "")).floor();
        assert_eq!(b.bytes(), (85_899_345_920f64 * 0.9) as u64);
        assert_eq!(b.render(), "floor(85899345920 B × 0.9)");
        // zero terms drop out of sums; max/min pick their operand
        let m = Expr::max([n(3, "a"), n(5, "b")]) + Expr::zero();
        assert_eq!((m.bytes(), m.render()), (5, "max(3 a, 5 b)".to_string()));
        // the numeric path's rounded quotients equal the formula's: exact, inexact,
        // negative, a fraction over a whole number, by 1 and by 0
        fn cases<N: Num>() -> [(N, N); 6] {
            [
                (N::n(12, "B"), N::n(4, "ranks")),
                (N::n(13, "B"), N::n(4, "ranks")),
                (N::n(3, "B").minus(N::n(16, "B")), N::n(4, "ranks")),
                (N::n(7, "B").over(N::n(2, "")), N::n(3, "ranks")),
                (N::n(7, "B"), N::n(1, "rank")),
                (N::n(7, "B"), N::n(0, "ranks")),
            ]
        }
        for (i, ((a, d), (na, nd))) in cases::<Expr>()
            .into_iter()
            .zip(cases::<Value>())
            .enumerate()
        {
            let tree = (a.clone().div_ceil(d.clone()), a.div_floor(d));
            let num = (na.div_ceil(nd), na.div_floor(nd));
            assert_eq!(tree.0.value(), num.0, "ceil, case {i}");
            assert_eq!(tree.1.value(), num.1, "floor, case {i}");
        }
        // 13 / 4 = 3.25: ceil 4, floor 3; (3 - 16) / 4 = -3.25: ceil -3, floor -4
        let v = {
            let (a, b) = (Value::n(13, "B"), Value::n(3, "B").minus(Value::n(16, "B")));
            let four = Value::n(4, "");
            [
                a.div_ceil(four).to_i64(),
                Num::div_floor(a, four).to_i64(),
                b.div_ceil(four).to_i64(),
                Num::div_floor(b, four).to_i64(),
            ]
        };
        assert_eq!(v, [4, 3, -3, -4]);
        let neg = n(3, "B").minus(n(5, "B"));
        assert_eq!(neg.value().to_i64(), -2);
        assert_eq!(neg.bytes(), 0);
    }
}
