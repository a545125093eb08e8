//! The one pre-step before `sqlparser`: GoogleSQL's `WITH DIFFERENTIAL_PRIVACY OPTIONS(…)`
//! after `SELECT`, which no dialect of the crate parses (0.62 knows neither the clause nor
//! its keyword). The query is cut into tokens by the crate's own tokenizer (BigQuery's
//! dialect: backtick identifiers, `'…'` and `"…"` strings); the clause is found as the four
//! tokens `WITH DIFFERENTIAL_PRIVACY OPTIONS (` right after the first `SELECT`, its options
//! up to the matching `)` are parsed by the crate's parser as `name = expression, …`, and the
//! tokens without the clause are handed back for the crate to parse as an ordinary `SELECT`.
//! Nothing here reads SQL text itself: only tokens, so a clause inside a string or a comment
//! is never seen as one.

use sqlparser::ast::{Expr, Ident};
use sqlparser::dialect::BigQueryDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::error::Error;

/// How deep the crate's parser may nest (its own guard against a stack overflow on
/// `((((…))))`): far more than any query of the subset needs.
pub const RECURSION_LIMIT: usize = 40;

/// The clause's options as written: each name (lower case) with its expression.
pub type Options = Vec<(String, Expr)>;

/// Splits `query` into the clause's options and the tokens of the rest (`SELECT …` without
/// the clause).
pub fn split(query: &str) -> Result<(Options, Vec<TokenWithSpan>), Error> {
    let dialect = BigQueryDialect {};
    let tokens = Tokenizer::new(&dialect, query)
        .tokenize_with_location()
        .map_err(|e| Error::usage(format!("the query: {e}")))?;
    // Positions of the tokens that are not whitespace or comments.
    let solid: Vec<usize> =
        (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let word = |k: usize, w: &str| {
        solid.get(k).is_some_and(|&i| matches!(&tokens[i].token, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w)))
    };
    if !word(0, "SELECT") {
        let first = solid.first().map_or(String::new(), |&i| tokens[i].token.to_string());
        let hint = if first.eq_ignore_ascii_case("WITH") {
            " (WITH … AS is a subquery, which dpstat sql does not run: query the table itself)"
        } else {
            ""
        };
        return Err(Error::usage(format!(
            "dpstat sql runs one SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon = E, …) … query{hint}"
        )));
    }
    if !(word(1, "WITH") && word(2, "DIFFERENTIAL_PRIVACY") && word(3, "OPTIONS")) {
        return Err(Error::usage(
            "a query without the differential privacy clause: write SELECT WITH DIFFERENTIAL_PRIVACY \
             OPTIONS(epsilon = E, …) after SELECT (dpstat releases nothing that is not private)",
        ));
    }
    let open = solid.get(4).copied().filter(|&i| tokens[i].token == Token::LParen).ok_or_else(|| {
        Error::usage("OPTIONS takes a list in parentheses: OPTIONS(epsilon = 1, delta = 1e-6, …)")
    })?;
    let mut depth = 0usize;
    let close = (open..tokens.len())
        .find(|&i| {
            match tokens[i].token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            depth == 0
        })
        .ok_or_else(|| Error::usage("OPTIONS( has no closing parenthesis"))?;
    let options = parse_options(&tokens[open + 1..close])?;
    let rest: Vec<TokenWithSpan> = tokens[..solid[1]].iter().chain(&tokens[close + 1..]).cloned().collect();
    Ok((options, rest))
}

/// `name = expression, …`, parsed by the crate.
fn parse_options(tokens: &[TokenWithSpan]) -> Result<Options, Error> {
    let dialect = BigQueryDialect {};
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .with_tokens_with_locations(tokens.to_vec());
    let options = parser
        .parse_comma_separated(|p| {
            let name: Ident = p.parse_identifier()?;
            p.expect_token(&Token::Eq)?;
            Ok((name.value.to_ascii_lowercase(), p.parse_expr()?))
        })
        .and_then(|options| match parser.peek_token().token {
            Token::EOF => Ok(options),
            other => Err(ParserError::ParserError(format!("expected , or ), found {other}"))),
        })
        .map_err(|e| Error::usage(format!("OPTIONS(…): {}", message(&e))))?;
    Ok(options)
}

/// The crate's message without its prefix.
pub fn message(e: &ParserError) -> String {
    match e {
        ParserError::TokenizerError(m) | ParserError::ParserError(m) => m.clone(),
        ParserError::RecursionLimitExceeded => "the query nests too deep".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clause_is_cut_out_and_its_options_parsed() {
        let (options, rest) = split(
            "select with differential_privacy options(epsilon=10, delta=.01, max_groups_contributed=1, \
             privacy_unit_column=id) item, count(*) from t group by item",
        )
        .unwrap();
        let names: Vec<&str> = options.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["epsilon", "delta", "max_groups_contributed", "privacy_unit_column"]);
        assert_eq!(options[1].1.to_string(), ".01");
        let text: String = rest.iter().map(|t| t.token.to_string()).collect();
        assert_eq!(text, "select  item, count(*) from t group by item");
    }

    #[test]
    fn a_clause_in_a_string_or_a_missing_one_is_refused() {
        for (query, needle) in [
            ("SELECT 'WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1)' FROM t", "without the differential"),
            ("SELECT COUNT(*) FROM t", "without the differential"),
            ("WITH x AS (SELECT 1) SELECT * FROM x", "subquery"),
            ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS epsilon=1", "parentheses"),
            ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1 COUNT(*)", "closing"),
            ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon 1) COUNT(*) FROM t", "OPTIONS"),
        ] {
            let e = split(query).unwrap_err();
            assert!(e.message().contains(needle), "{query}: {e}");
        }
    }
}
