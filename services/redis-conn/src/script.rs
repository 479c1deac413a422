//! Named arguments for Lua scripts: one Rust definition ([`Schema`]) from which both sides are
//! derived, so that adding an argument cannot shift the others.
//!
//! A schema lists each argument's name and how many `ARGV` slots it takes (a group of several,
//! such as a clock's press plan, arrives in Lua as a list). [`Schema::prologue`] is the Lua that
//! names them (`local A = {}`, `A.nonce = ARGV[1]`, …, `A.plan = {unpack(ARGV, 25, 37)}`), put
//! before the script's body, which reads `A.nonce` and never `ARGV[1]`. On the Rust side
//! [`Args`] takes values by name and lays them out in the schema's order; an argument left unset
//! is sent empty, and unset ones at the end are not sent at all (in Lua they are `nil`). A
//! schema may end with a list of any length ([`Schema::with_rest`]: a match's events, a
//! record's fields), which arrives as a Lua list too.
//!
//! ```
//! use arbiter_redis_conn::script::Schema;
//!
//! static SCHEMA: Schema = Schema::new(&[("nonce", 1), ("plan", 3), ("ttl", 1)]);
//! assert_eq!(
//!     SCHEMA.prologue(),
//!     "local A = {}\nA.nonce = ARGV[1]\nA.plan = {ARGV[2], ARGV[3], ARGV[4]}\nA.ttl = ARGV[5]\n"
//! );
//! let mut args = SCHEMA.args();
//! args.set("ttl", 60_000).set("nonce", "n1");
//! assert_eq!(args.slots().unwrap(), ["n1", "", "", "", "60000"]);
//! ```

use std::fmt::Display;

/// Lua helpers any script of any service may start with (`lua/basics.lua`): `pack(t)` and
/// `unpk(s)`, the packed-list encoding (each item as its byte length, `:`, and its bytes);
/// `fmt(x)`, an integer-valued number as decimal text; `tnow()`, Redis `TIME` in Unix ms.
pub const BASICS: &str = include_str!("lua/basics.lua");

/// Reads Redis's `TIME` as Unix ms.
pub async fn redis_now<C: redis::aio::ConnectionLike + Send>(
    conn: &mut C,
) -> redis::RedisResult<u64> {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(secs * 1000 + micros / 1000)
}

/// A value a script takes from Rust as a constant (see [`constants`]).
#[derive(Clone, Copy, Debug)]
pub enum Constant<'a> {
    /// A string (a key, a channel name).
    Text(&'a str),
    /// A whole number.
    Number(u64),
    /// A list of strings.
    List(&'a [&'a str]),
}

/// The Lua that defines `defs` as local constants of a script, so that a script's keys, channels
/// and limits come from the Rust constants that name them: `("CHANGES", Constant::Text(x))`
/// gives `local CHANGES = 'x'`. Text must not hold a quote or a backslash (names of keys and
/// channels do not); such a definition panics, as a mistake of the code, not of input.
///
/// ```
/// use arbiter_redis_conn::script::{Constant, constants};
/// assert_eq!(
///     constants(&[("K", Constant::Text("a:b")), ("N", Constant::Number(3)), ("L", Constant::List(&["x", "y"]))]),
///     "local K = 'a:b'\nlocal N = 3\nlocal L = {'x', 'y'}\n"
/// );
/// ```
pub fn constants(defs: &[(&str, Constant<'_>)]) -> String {
    let quoted = |t: &str| {
        assert!(
            !t.contains(['\'', '\\', '\n']),
            "a Lua constant holds a quote, a backslash or a newline: {t:?}"
        );
        format!("'{t}'")
    };
    let mut out = String::new();
    for (name, value) in defs {
        let value = match value {
            Constant::Text(t) => quoted(t),
            Constant::Number(n) => n.to_string(),
            Constant::List(items) => {
                let items: Vec<String> = items.iter().map(|t| quoted(t)).collect();
                format!("{{{}}}", items.join(", "))
            }
        };
        out.push_str(&format!("local {name} = {value}\n"));
    }
    out
}

/// The arguments of one script: each one's name and its number of `ARGV` slots, in order.
#[derive(Debug)]
pub struct Schema {
    args: &'static [(&'static str, usize)],
    rest: Option<&'static str>,
}

impl Schema {
    /// The schema of `args`: `(name, slots)` in the order the script receives them. Names are
    /// Lua identifiers; a group (`slots` above 1) arrives as a list.
    pub const fn new(args: &'static [(&'static str, usize)]) -> Schema {
        Schema { args, rest: None }
    }

    /// The schema of `args` followed by a list of any length named `rest` (every slot after
    /// the others; in Lua a list, empty when none is sent).
    pub const fn with_rest(args: &'static [(&'static str, usize)], rest: &'static str) -> Schema {
        Schema {
            args,
            rest: Some(rest),
        }
    }

    /// The Lua that names the arguments: the table `A`, one field per argument.
    pub fn prologue(&self) -> String {
        let mut out = String::from("local A = {}\n");
        let mut at = 1;
        for &(name, slots) in self.args {
            if slots == 1 {
                out.push_str(&format!("A.{name} = ARGV[{at}]\n"));
            } else {
                let items: Vec<String> = (at..at + slots).map(|i| format!("ARGV[{i}]")).collect();
                out.push_str(&format!("A.{name} = {{{}}}\n", items.join(", ")));
            }
            at += slots;
        }
        if let Some(rest) = self.rest {
            out.push_str(&format!("A.{rest} = {{unpack(ARGV, {at})}}\n"));
        }
        out
    }

    /// Empty arguments to fill by name.
    pub fn args(&'static self) -> Args {
        Args {
            schema: self,
            values: vec![None; self.args.len()],
            rest: Vec::new(),
            error: None,
        }
    }

    fn index(&self, name: &str) -> Option<(usize, usize)> {
        self.args
            .iter()
            .position(|&(n, _)| n == name)
            .map(|i| (i, self.args[i].1))
    }
}

/// Values for a script's arguments, set by name (see [`Schema`]).
#[derive(Clone, Debug)]
pub struct Args {
    schema: &'static Schema,
    values: Vec<Option<Vec<String>>>,
    rest: Vec<String>,
    /// The first name the schema does not have, or the first group of the wrong size.
    error: Option<String>,
}

impl Args {
    /// Sets the one-slot argument `name`.
    pub fn set(&mut self, name: &str, value: impl Display) -> &mut Args {
        self.put(name, vec![value.to_string()])
    }

    /// Sets the group `name` to `values` (as many as its slots).
    pub fn set_group<T: Display>(
        &mut self,
        name: &str,
        values: impl IntoIterator<Item = T>,
    ) -> &mut Args {
        self.put(name, values.into_iter().map(|v| v.to_string()).collect())
    }

    /// Sets the list that ends the schema (see [`Schema::with_rest`]).
    pub fn rest<T: Display>(&mut self, values: impl IntoIterator<Item = T>) -> &mut Args {
        if self.schema.rest.is_none() {
            self.error
                .get_or_insert_with(|| "the script takes no list at the end".to_owned());
        }
        self.rest = values.into_iter().map(|v| v.to_string()).collect();
        self
    }

    fn put(&mut self, name: &str, values: Vec<String>) -> &mut Args {
        match self.schema.index(name) {
            Some((i, slots)) if slots == values.len() => self.values[i] = Some(values),
            Some((_, slots)) => {
                self.error.get_or_insert_with(|| {
                    format!(
                        "script argument {name} takes {slots} values, not {}",
                        values.len()
                    )
                });
            }
            None => {
                self.error
                    .get_or_insert_with(|| format!("the script has no argument {name}"));
            }
        }
        self
    }

    /// The `ARGV` slots in order: unset arguments empty, unset ones at the end left out (unless
    /// a list follows them), then the list. `Err`
    /// names an argument the schema does not have, or a group set with the wrong number of
    /// values (a mistake of the caller's code, reported rather than sent).
    pub fn slots(self) -> Result<Vec<String>, String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let last_set = if self.rest.is_empty() {
            self.values.iter().rposition(Option::is_some)
        } else {
            self.values.len().checked_sub(1)
        };
        let mut out = Vec::new();
        for (i, v) in self.values.into_iter().enumerate() {
            if last_set.is_none_or(|l| i > l) {
                break;
            }
            match v {
                Some(values) => out.extend(values),
                None => out.extend(std::iter::repeat_n(String::new(), self.schema.args[i].1)),
            }
        }
        out.extend(self.rest);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static S: Schema = Schema::new(&[("a", 1), ("g", 2), ("b", 1), ("c", 1)]);

    #[test]
    fn slots_follow_the_schema_whatever_the_order_of_setting() {
        let mut args = S.args();
        args.set("b", 7)
            .set_group("g", ["x", "y"])
            .set("a", "first");
        assert_eq!(args.slots().unwrap(), ["first", "x", "y", "7"]);
    }

    #[test]
    fn unset_arguments_are_empty_and_trailing_ones_left_out() {
        let mut args = S.args();
        args.set("b", 1);
        assert_eq!(args.slots().unwrap(), ["", "", "", "1"]);
        assert_eq!(S.args().slots().unwrap(), Vec::<String>::new());
    }

    #[test]
    fn unknown_names_and_wrong_groups_are_errors() {
        let mut args = S.args();
        args.set("nope", 1);
        assert!(args.slots().unwrap_err().contains("nope"));
        let mut args = S.args();
        args.set_group("g", ["only one"]);
        assert!(args.slots().unwrap_err().contains("takes 2"));
        let mut args = S.args();
        args.set("g", 1);
        assert!(args.slots().is_err());
    }

    static R: Schema = Schema::with_rest(&[("a", 1), ("g", 2)], "events");

    #[test]
    fn a_list_follows_every_other_slot() {
        assert_eq!(
            R.prologue(),
            "local A = {}\nA.a = ARGV[1]\nA.g = {ARGV[2], ARGV[3]}\nA.events = {unpack(ARGV, 4)}\n"
        );
        let mut args = R.args();
        args.set("a", 1).rest(["e1", "e2"]);
        assert_eq!(args.slots().unwrap(), ["1", "", "", "e1", "e2"]);
        let mut args = R.args();
        args.set("a", 1);
        assert_eq!(args.slots().unwrap(), ["1"]);
        let mut args = S.args();
        args.rest(["x"]);
        assert!(args.slots().unwrap_err().contains("no list"));
    }

    #[test]
    fn the_prologue_numbers_every_slot_once() {
        assert_eq!(
            S.prologue(),
            "local A = {}\nA.a = ARGV[1]\nA.g = {ARGV[2], ARGV[3]}\nA.b = ARGV[4]\nA.c = ARGV[5]\n"
        );
    }
}
