//! Every term's formula evaluates to the bytes shown beside it.
//!
//! For every estimate of the grid (every preset x engine x mode x a few layouts, the same
//! grid as the golden snapshot), each row of `details` is parsed with the grammar of
//! `calc_core::term` by an evaluator written here, independently of the core's, and must
//! give exactly its `bytes`; each non-zero component of the peak phase, each overhead and
//! the CPU and NVMe memory must have exactly one row with the same bytes.

mod common;
use common::grid::cases;

use calc_core::{COMPONENTS, Config, OVERHEADS, estimate};

/// A value: an exact rational, or a float once a float literal has entered.
#[derive(Debug, Clone, Copy, PartialEq)]
enum V {
    Q(i128, i128),
    F(f64),
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

fn q(n: i128, d: i128) -> V {
    assert!(d != 0, "division by zero");
    let s = if d < 0 { -1 } else { 1 };
    let g = gcd(n, d);
    V::Q(s * n / g, s * d / g)
}

impl V {
    fn f(self) -> f64 {
        match self {
            V::Q(n, d) => n as f64 / d as f64,
            V::F(x) => x,
        }
    }
    fn op(self, o: V, c: char) -> V {
        match (self, o) {
            (V::Q(a, b), V::Q(c2, d)) => match c {
                '+' => q(a * d + c2 * b, b * d),
                '-' => q(a * d - c2 * b, b * d),
                '*' => q(a * c2, b * d),
                '/' => q(a * d, b * c2),
                _ => unreachable!(),
            },
            (x, y) => V::F(match c {
                '+' => x.f() + y.f(),
                '-' => x.f() - y.f(),
                '*' => x.f() * y.f(),
                '/' => x.f() / y.f(),
                _ => unreachable!(),
            }),
        }
    }
    fn cmp(self, o: V) -> std::cmp::Ordering {
        match (self, o) {
            (V::Q(a, b), V::Q(c, d)) => (a * d).cmp(&(c * b)),
            (x, y) => x.f().total_cmp(&y.f()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(V),
    Op(char),
    Open,
    Close,
    Comma,
    Func(String),
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            if i < chars.len() && chars[i].is_alphabetic() {
                return Err(format!("a word glued to a number at {start}: {s}"));
            }
            let text: String = chars[start..i].iter().collect();
            out.push(Tok::Num(if text.contains('.') {
                V::F(text.parse().map_err(|_| format!("bad number {text}"))?)
            } else {
                V::Q(text.parse().map_err(|_| format!("bad number {text}"))?, 1)
            }));
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '-' | '\'' | '.'))
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if matches!(word.as_str(), "ceil" | "floor" | "max" | "min")
                && chars.get(i) == Some(&'(')
            {
                out.push(Tok::Func(word));
            }
            // any other word is a label
        } else {
            out.push(match ch {
                '×' => Tok::Op('*'),
                '/' => Tok::Op('/'),
                '+' => Tok::Op('+'),
                '−' => Tok::Op('-'),
                '(' => Tok::Open,
                ')' => Tok::Close,
                ',' => Tok::Comma,
                _ => return Err(format!("unexpected {ch:?} in {s}")),
            });
            i += 1;
        }
    }
    Ok(out)
}

struct P {
    t: Vec<Tok>,
    i: usize,
}

impl P {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }
    fn next(&mut self) -> Option<Tok> {
        self.i += 1;
        self.t.get(self.i - 1).cloned()
    }
    fn expr(&mut self) -> Result<V, String> {
        let mut v = self.term()?;
        while let Some(Tok::Op(c @ ('+' | '-'))) = self.peek().cloned() {
            self.i += 1;
            v = v.op(self.term()?, c);
        }
        Ok(v)
    }
    fn term(&mut self) -> Result<V, String> {
        let mut v = self.factor()?;
        while let Some(Tok::Op(c @ ('*' | '/'))) = self.peek().cloned() {
            self.i += 1;
            v = v.op(self.factor()?, c);
        }
        Ok(v)
    }
    fn factor(&mut self) -> Result<V, String> {
        match self.next() {
            Some(Tok::Num(v)) => Ok(v),
            Some(Tok::Open) => {
                let v = self.expr()?;
                (self.next() == Some(Tok::Close))
                    .then_some(v)
                    .ok_or("missing )".to_string())
            }
            Some(Tok::Func(f)) => {
                if self.next() != Some(Tok::Open) {
                    return Err("missing ( after a function".into());
                }
                let mut args = vec![self.expr()?];
                while self.peek() == Some(&Tok::Comma) {
                    self.i += 1;
                    args.push(self.expr()?);
                }
                if self.next() != Some(Tok::Close) {
                    return Err("missing ) of a function".into());
                }
                let one = |a: &Vec<V>| {
                    if a.len() == 1 {
                        Ok(a[0])
                    } else {
                        Err("ceil/floor take one argument".to_string())
                    }
                };
                Ok(match f.as_str() {
                    "ceil" => match one(&args)? {
                        V::Q(n, d) => V::Q(-((-n).div_euclid(d)), 1),
                        V::F(x) => V::Q(x.ceil() as i128, 1),
                    },
                    "floor" => match one(&args)? {
                        V::Q(n, d) => V::Q(n.div_euclid(d), 1),
                        V::F(x) => V::Q(x.floor() as i128, 1),
                    },
                    "max" => args
                        .into_iter()
                        .reduce(|a, b| if b.cmp(a).is_gt() { b } else { a })
                        .unwrap(),
                    _ => args
                        .into_iter()
                        .reduce(|a, b| if b.cmp(a).is_lt() { b } else { a })
                        .unwrap(),
                })
            }
            t => Err(format!("unexpected token {t:?}")),
        }
    }
}

/// The value of a rendered formula.
fn eval(formula: &str) -> Result<V, String> {
    let mut p = P {
        t: lex(formula)?,
        i: 0,
    };
    let v = p.expr()?;
    if p.i != p.t.len() {
        return Err(format!("trailing tokens at {} of {formula}", p.i));
    }
    Ok(v)
}

#[test]
fn the_evaluator_reads_the_grammar() {
    assert_eq!(eval("2 B × 3 params + 4 B").unwrap(), V::Q(10, 1));
    assert_eq!(eval("ceil(7 B / 2 ranks)").unwrap(), V::Q(4, 1));
    assert_eq!(eval("floor(10 B × 0.9)").unwrap(), V::Q(9, 1));
    assert_eq!(eval("max(3 a, min(9 b, 5 c)) − 1").unwrap(), V::Q(4, 1));
    assert_eq!(eval("(1 + 2) x-things × 3 / 2").unwrap(), V::Q(9, 2));
    assert!(eval("80GB").is_err());
    assert!(eval("2 B 3 params").is_err());
}

#[test]
fn every_formula_evaluates_to_its_bytes() {
    let mut checked = 0usize;
    let mut estimates = 0usize;
    for (name, doc) in cases() {
        let Ok(e) = Config::from_value(doc).and_then(|c| estimate(&c)) else {
            continue;
        };
        estimates += 1;
        for d in &e.details {
            let v = eval(&d.formula)
                .unwrap_or_else(|err| panic!("{name} {}: {err}: {}", d.name, d.formula));
            assert_eq!(
                v,
                V::Q(d.bytes as i128, 1),
                "{name} {}: {} evaluates to {v:?}, shown {} bytes",
                d.name,
                d.formula,
                d.bytes
            );
            assert!(!d.source.is_empty(), "{name} {}: no source", d.name);
            checked += 1;
        }
        // one row per non-zero component of the peak, per overhead, for CPU and NVMe memory
        let rows = |n: &str| e.details.iter().filter(|d| d.name == n).collect::<Vec<_>>();
        for comp in COMPONENTS {
            let b = e.components[*comp];
            let r = rows(comp);
            match b {
                0 => assert!(r.is_empty(), "{name} {comp}: a row for zero bytes"),
                _ => assert!(
                    r.len() == 1 && r[0].bytes == b,
                    "{name} {comp}: {b} bytes, rows {r:?}"
                ),
            }
        }
        for o in OVERHEADS {
            let b = e.overheads[*o];
            let r = rows(o);
            assert!(
                (b == 0 && r.is_empty()) || (r.len() == 1 && r[0].bytes == b),
                "{name} {o}: {b} bytes, rows {r:?}"
            );
        }
        for (n, b) in [("cpu_memory", e.cpu_memory_bytes), ("nvme", e.nvme_bytes)] {
            let r = rows(n);
            assert!(
                (b == 0 && r.is_empty()) || (r.len() == 1 && r[0].bytes == b),
                "{name} {n}: {b} bytes, rows {r:?}"
            );
        }
    }
    assert!(estimates > 3000, "{estimates} estimates");
    assert!(checked > 30_000, "{checked} formulas");
}
