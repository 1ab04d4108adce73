//! Memory terms: every number the model computes is an [`Expr`] whose value *is* the
//! bytes and whose rendering is the formula with its numbers substituted, so that the
//! formula a user reads cannot disagree with the bytes beside it (Megatron-LM's
//! `theoretical_memory_usage.py` keeps the comment and the arithmetic on one line; here they
//! are one value). A [`Term`] adds the source (paper, framework file) of the formula.
//!
//! Arithmetic is exact: integers and rationals in `i128`, with `ceil(..)` and `floor(..)`
//! where the code rounds. A float appears only where the model multiplies by a user's
//! fraction (`gpu_memory_utilization`, `allocator_reserve_fraction`); it is written with a
//! decimal point and, from there on, the expression is evaluated in `f64` left to right, as
//! the Rust code it replaces was.
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
pub type Label = Cow<'static, str>;

/// The value of an expression: an exact rational `n / d` (`d > 0`, reduced), or an `f64`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Exact(i128, i128),
    Float(f64),
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    // nearly every value fits 64 bits, where division is a single instruction
    if let (Ok(mut x), Ok(mut y)) = (u64::try_from(a), u64::try_from(b)) {
        while y != 0 {
            (x, y) = (y, x % y);
        }
        return i128::from(x.max(1));
    }
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

impl Value {
    fn ratio(n: i128, d: i128) -> Value {
        if d == 0 {
            return Value::Float(f64::NAN);
        }
        if d == 1 {
            return Value::Exact(n, 1);
        }
        let (n, d) = if d < 0 { (-n, -d) } else { (n, d) };
        let g = gcd(n, d);
        if let (Ok(n), Ok(d), Ok(g)) = (i64::try_from(n), i64::try_from(d), i64::try_from(g)) {
            return Value::Exact(i128::from(n / g), i128::from(d / g));
        }
        Value::Exact(n / g, d / g)
    }
    /// The value as an `f64`.
    pub fn to_f64(self) -> f64 {
        match self {
            Value::Exact(n, d) => n as f64 / d as f64,
            Value::Float(f) => f,
        }
    }
    fn exact2(self, o: Value) -> Option<(i128, i128, i128, i128)> {
        match (self, o) {
            (Value::Exact(a, b), Value::Exact(c, d)) => Some((a, b, c, d)),
            _ => None,
        }
    }
    fn add(self, o: Value) -> Value {
        // whole numbers (nearly every value): no common denominator to find
        if let (Value::Exact(a, 1), Value::Exact(c, 1)) = (self, o) {
            // two 64-bit values cannot overflow an i128 sum
            if let (Ok(x), Ok(y)) = (i64::try_from(a), i64::try_from(c)) {
                return Value::Exact(i128::from(x) + i128::from(y), 1);
            }
            if let Some(s) = a.checked_add(c) {
                return Value::Exact(s, 1);
            }
        }
        self.exact2(o)
            .and_then(|(a, b, c, d)| {
                let n = a.checked_mul(d)?.checked_add(c.checked_mul(b)?)?;
                Some(Value::ratio(n, b.checked_mul(d)?))
            })
            .unwrap_or_else(|| Value::Float(self.to_f64() + o.to_f64()))
    }
    fn sub(self, o: Value) -> Value {
        self.add(o.neg())
    }
    fn neg(self) -> Value {
        match self {
            Value::Exact(n, d) => Value::Exact(-n, d),
            Value::Float(f) => Value::Float(-f),
        }
    }
    fn mul(self, o: Value) -> Value {
        if let (Value::Exact(a, 1), Value::Exact(c, 1)) = (self, o) {
            // two 64-bit factors cannot overflow an i128 product (one widening multiply)
            if let (Ok(x), Ok(y)) = (i64::try_from(a), i64::try_from(c)) {
                return Value::Exact(i128::from(x) * i128::from(y), 1);
            }
            if let Some(p) = a.checked_mul(c) {
                return Value::Exact(p, 1);
            }
        }
        self.exact2(o)
            .and_then(|(a, b, c, d)| {
                let (g1, g2) = (gcd(a, d), gcd(c, b));
                let n = (a / g1).checked_mul(c / g2)?;
                Some(Value::ratio(n, (b / g2).checked_mul(d / g1)?))
            })
            .unwrap_or_else(|| Value::Float(self.to_f64() * o.to_f64()))
    }
    fn div(self, o: Value) -> Value {
        match o {
            Value::Exact(0, _) => Value::Float(f64::NAN),
            Value::Exact(c, d) => self.mul(Value::ratio(d, c)),
            Value::Float(f) => Value::Float(self.to_f64() / f),
        }
    }
    fn floor(self) -> Value {
        match self {
            Value::Exact(n, d) => Value::Exact(n.div_euclid(d), 1),
            Value::Float(f) => Value::Exact(f.floor() as i128, 1),
        }
    }
    fn ceil(self) -> Value {
        match self {
            Value::Exact(n, d) => Value::Exact(-((-n).div_euclid(d)), 1),
            Value::Float(f) => Value::Exact(f.ceil() as i128, 1),
        }
    }
    fn cmp(self, o: Value) -> Ordering {
        self.exact2(o)
            .and_then(|(a, b, c, d)| Some(a.checked_mul(d)?.cmp(&c.checked_mul(b)?)))
            .unwrap_or_else(|| self.to_f64().total_cmp(&o.to_f64()))
    }
    fn is_zero(self) -> bool {
        matches!(self, Value::Exact(0, _)) || self == Value::Float(0.0)
    }
    /// The value as whole bytes: exact integers as they are; anything else (a fraction, a
    /// float, a negative number) is a bug in the formula, caught by the tests, and truncated
    /// toward zero here so that no input can make it panic.
    pub fn to_u64(self) -> u64 {
        match self {
            Value::Exact(n, 1) if n >= 0 => u64::try_from(n).unwrap_or(u64::MAX),
            v => {
                let f = v.to_f64();
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
        match self {
            Value::Exact(n, 1) => {
                i64::try_from(n).unwrap_or(if n < 0 { i64::MIN } else { i64::MAX })
            }
            v => {
                let f = v.to_f64();
                if f.is_finite() { f as i64 } else { 0 }
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Node {
    Num {
        float: bool,
        label: Label,
    },
    Sum(Vec<Expr>),
    Prod(Vec<Expr>),
    Sub(Box<Expr>, Box<Expr>),
    Div(Box<Expr>, Box<Expr>),
    Ceil(Box<Expr>),
    Floor(Box<Expr>),
    Max(Vec<Expr>),
    Min(Vec<Expr>),
    Group(Box<Expr>, Label),
    /// A composite built in numeric mode ([`numeric`]): its value only, no formula.
    Elided,
}

thread_local! {
    /// Set while [`numeric`] runs: composite expressions keep their value and drop their
    /// structure (no vectors, boxes or strings are built).
    static NUMERIC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `true` inside [`numeric`].
pub(crate) fn is_numeric() -> bool {
    NUMERIC.with(|c| c.get())
}

/// Runs `f` in numeric mode: every expression built inside computes its value exactly as
/// outside (the same [`Value`] arithmetic in the same order) but keeps no formula, so
/// nothing is allocated for it; [`Expr::render`] of such an expression is empty. This is
/// the plan search's fast path ([`crate::estimate_peak`]); the full report is built only for
/// the plan a user opens.
///
/// Values are the same because exact rationals are associative (a product or sum of
/// composites folds the same whether or not the children are flattened), and a float
/// factor (a user's fraction) only ever ends a product, whose fold order is then the same
/// either way; `core/tests/numeric.rs` checks every preset x engine x mode to the byte.
pub(crate) fn numeric<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            NUMERIC.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(NUMERIC.with(|c| c.replace(true)));
    f()
}

/// A term's source text from `format!` arguments, formatted only outside [`numeric`] mode
/// (a numeric estimate reports no text, so it builds none): a `Cow<'static, str>`, empty in
/// numeric mode.
macro_rules! source {
    ($($arg:tt)*) => {
        if $crate::term::is_numeric() {
            ::std::borrow::Cow::<'static, str>::Borrowed("")
        } else {
            ::std::borrow::Cow::<'static, str>::Owned(format!($($arg)*))
        }
    };
}
pub(crate) use source;

/// An arithmetic expression over labelled numbers; its value is computed as it is built.
#[derive(Debug, Clone)]
pub struct Expr {
    value: Value,
    node: Node,
}

/// A whole number with a label: `n(4, "B")` renders `4 B`.
pub fn n(v: u64, label: impl Into<Label>) -> Expr {
    Expr {
        value: Value::Exact(v as i128, 1),
        node: Node::Num {
            float: false,
            label: label.into(),
        },
    }
}

/// A fraction or factor given as a float (`0.9`), rendered with a decimal point.
pub fn f(v: f64, label: impl Into<Label>) -> Expr {
    Expr {
        value: Value::Float(v),
        node: Node::Num {
            float: true,
            label: label.into(),
        },
    }
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
    fn elided(value: Value) -> Expr {
        Expr {
            value,
            node: Node::Elided,
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
        if is_numeric() {
            // `+` in numeric mode: zero terms drop out, the value folds left to right
            return terms.into_iter().fold(Expr::zero(), |a, t| a + t);
        }
        let mut parts = Vec::new();
        for t in terms {
            if t.is_zero() {
                continue;
            }
            match t.node {
                Node::Sum(v) => parts.extend(v),
                _ => parts.push(t),
            }
        }
        match parts.len() {
            0 => Expr::zero(),
            1 => parts.pop().unwrap_or_else(Expr::zero),
            _ => Expr {
                value: parts.iter().fold(Value::Exact(0, 1), |a, t| a.add(t.value)),
                node: Node::Sum(parts),
            },
        }
    }
    /// The product of `factors`, evaluated left to right.
    pub fn product(factors: impl IntoIterator<Item = Expr>) -> Expr {
        if is_numeric() {
            // `×` in numeric mode: the value folds left to right
            return factors
                .into_iter()
                .reduce(|a, t| a * t)
                .unwrap_or_else(|| n(1, ""));
        }
        let mut parts = Vec::new();
        for t in factors {
            match t.node {
                Node::Prod(v) => parts.extend(v),
                _ => parts.push(t),
            }
        }
        match parts.len() {
            0 => n(1, ""),
            1 => parts.pop().unwrap_or_else(Expr::zero),
            _ => Expr {
                value: parts
                    .iter()
                    .skip(1)
                    .fold(parts[0].value, |a, t| a.mul(t.value)),
                node: Node::Prod(parts),
            },
        }
    }
    /// `self − other` (exact; may be negative).
    pub fn minus(self, other: Expr) -> Expr {
        if other.is_zero() {
            return self;
        }
        if is_numeric() {
            return Expr::elided(self.value.sub(other.value));
        }
        Expr {
            value: self.value.sub(other.value),
            node: Node::Sub(Box::new(self), Box::new(other)),
        }
    }
    /// `self / d` (exact).
    pub fn over(self, d: Expr) -> Expr {
        if is_numeric() {
            // a quotient by 1 is its dividend, as `rounded` writes it
            if d.value == Value::Exact(1, 1) {
                return self;
            }
            return Expr::elided(self.value.div(d.value));
        }
        Expr {
            value: self.value.div(d.value),
            node: Node::Div(Box::new(self), Box::new(d)),
        }
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
            Node::Div(a, d) if d.value == Value::Exact(1, 1) => return *a,
            n => Expr {
                value: self.value,
                node: n,
            },
        };
        if matches!(q.value, Value::Exact(_, 1)) {
            return q;
        }
        if is_numeric() {
            return Expr::elided(round(q.value));
        }
        Expr {
            value: round(q.value),
            node: node(Box::new(q)),
        }
    }
    /// `floor(self)` (a float product truncated to bytes, `as u64`).
    pub fn floor(self) -> Expr {
        self.rounded(Value::floor, Node::Floor)
    }
    fn extreme(terms: Vec<Expr>, want: Ordering, max: bool) -> Expr {
        let mut terms = terms;
        if terms.len() <= 1 {
            return terms.pop().unwrap_or_else(Expr::zero);
        }
        let value = terms.iter().skip(1).fold(terms[0].value, |a, t| {
            if t.value.cmp(a) == want { t.value } else { a }
        });
        if is_numeric() {
            return Expr::elided(value);
        }
        Expr {
            value,
            node: if max {
                Node::Max(terms)
            } else {
                Node::Min(terms)
            },
        }
    }
    /// `max(a, b, ...)`.
    pub fn max(terms: Vec<Expr>) -> Expr {
        Expr::extreme(terms, Ordering::Greater, true)
    }
    /// `min(a, b, ...)`.
    pub fn min(terms: Vec<Expr>) -> Expr {
        Expr::extreme(terms, Ordering::Less, false)
    }
    /// `(self) label`: names a sub-expression.
    pub fn label(self, label: impl Into<Label>) -> Expr {
        if is_numeric() {
            return self;
        }
        Expr {
            value: self.value,
            node: Node::Group(Box::new(self), label.into()),
        }
    }

    fn is_additive(&self) -> bool {
        matches!(self.node, Node::Sum(_) | Node::Sub(..))
    }
    fn is_atom(&self) -> bool {
        matches!(
            self.node,
            Node::Num { .. }
                | Node::Ceil(_)
                | Node::Floor(_)
                | Node::Max(_)
                | Node::Min(_)
                | Node::Group(..)
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
        match &self.node {
            Node::Num { float, label } => {
                match self.value {
                    Value::Float(v) if *float && v.fract() == 0.0 && v.abs() < 1e15 => {
                        let _ = write!(out, "{v:.1}");
                    }
                    Value::Float(v) => {
                        let _ = write!(out, "{v}");
                    }
                    Value::Exact(v, _) => {
                        let _ = write!(out, "{v}");
                    }
                }
                if !label.is_empty() {
                    out.push(' ');
                    out.push_str(label);
                }
            }
            Node::Sum(v) => {
                for (i, t) in v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" + ");
                    }
                    t.write_child(out, i > 0 && matches!(t.node, Node::Sub(..)));
                }
            }
            Node::Prod(v) => {
                for (i, t) in v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" × ");
                    }
                    // a float quotient is evaluated where it stands (f64 is not associative)
                    let float_div =
                        matches!(t.node, Node::Div(..)) && matches!(t.value, Value::Float(_));
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
                out.push_str(if matches!(self.node, Node::Ceil(_)) {
                    "ceil("
                } else {
                    "floor("
                });
                a.write(out);
                out.push(')');
            }
            Node::Max(v) | Node::Min(v) => {
                out.push_str(if matches!(self.node, Node::Max(_)) {
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
            Node::Elided => {}
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
        if is_numeric() {
            // as `sum`: a zero operand drops out
            return match (self.is_zero(), o.is_zero()) {
                (_, true) => self,
                (true, false) => o,
                _ => Expr::elided(self.value.add(o.value)),
            };
        }
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
        if is_numeric() {
            return Expr::elided(self.value.mul(o.value));
        }
        Expr::product([self, o])
    }
}

/// A memory term: its expression (bytes and formula in one) and the source of the formula.
#[derive(Debug, Clone)]
pub struct Term {
    pub expr: Expr,
    pub source: Cow<'static, str>,
}

impl Term {
    /// A term computed by `expr`, from `source`.
    pub fn new(expr: Expr, source: impl Into<Cow<'static, str>>) -> Term {
        Term {
            expr,
            source: source.into(),
        }
    }
    /// No memory.
    pub fn zero() -> Term {
        Term::new(Expr::zero(), "")
    }
    /// The term's bytes.
    pub fn bytes(&self) -> u64 {
        self.expr.bytes()
    }
    pub fn is_zero(&self) -> bool {
        self.expr.is_zero()
    }
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

impl std::ops::Add for Term {
    type Output = Term;
    /// Both terms' memory; the sources of the non-zero ones, joined.
    fn add(self, o: Term) -> Term {
        let source = match (self.is_zero(), o.is_zero()) {
            (_, true) => self.source,
            (true, false) => o.source,
            _ if is_numeric() => self.source,
            _ if self.source == o.source => self.source,
            _ => format!("{}; {}", self.source, o.source).into(),
        };
        Term {
            expr: self.expr + o.expr,
            source,
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
        let m = Expr::max(vec![n(3, "a"), n(5, "b")]) + Expr::zero();
        assert_eq!((m.bytes(), m.render()), (5, "max(3 a, 5 b)".to_string()));
        let neg = n(3, "B").minus(n(5, "B"));
        assert_eq!(neg.value().to_i64(), -2);
        assert_eq!(neg.bytes(), 0);
    }
}
