//! How a real number is printed everywhere: the shortest decimal that reads back as the same
//! f64, in exponent form only for very large or small magnitudes, so ordinary values stay plain
//! for `awk` and spreadsheets.

/// A finite f64 as text.
pub fn real(x: f64) -> String {
    match x {
        0.0 => "0".to_string(),
        x if (1e-5..1e16).contains(&x.abs()) => format!("{x}"),
        x => format!("{x:e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_back_exactly() {
        for x in [0.1, 123456.789, -2.5, 1e20, 3.3e-9, 9007199254740993.0, -0.0] {
            let s = real(x);
            assert_eq!(s.parse::<f64>().unwrap(), x, "{s}");
        }
        assert_eq!(real(200000.0), "200000");
        assert_eq!(real(1e300), "1e300");
    }
}
