//! `#[lockscope::test]`: `#[tokio::test]` with lockscope's detector armed for the test.
//!
//! Use it through the `lockscope` crate (`#[lockscope::test]`); see its documentation.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, ItemFn, Lit, Meta, Token};

struct Args {
    multi_thread: bool,
    worker_threads: Option<usize>,
    start_paused: Option<bool>,
    stuck_ms: Option<u64>,
    starvation_ms: Option<u64>,
    leak_ms: Option<u64>,
    worker_stall_ms: Option<u64>,
    timeout_ms: Option<u64>,
    /// `Some(0)`: a bare `stress` (the default number of runs).
    stress: Option<u32>,
    krate: Option<syn::Path>,
}

fn lit_str(e: &Expr) -> Option<String> {
    match e {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(s.value()),
        _ => None,
    }
}

fn lit_int<T: std::str::FromStr>(e: &Expr, key: &str) -> syn::Result<T>
where
    T::Err: std::fmt::Display,
{
    match e {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => i.base10_parse::<T>(),
        _ => Err(syn::Error::new_spanned(
            e,
            format!("`{key}` expects an integer literal"),
        )),
    }
}

fn lit_bool(e: &Expr, key: &str) -> syn::Result<bool> {
    match e {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Ok(b.value),
        _ => Err(syn::Error::new_spanned(
            e,
            format!("`{key}` expects `true` or `false`"),
        )),
    }
}

fn parse_args(attr: TokenStream2) -> syn::Result<Args> {
    let parsed = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr)?;
    let mut a = Args {
        multi_thread: false,
        worker_threads: None,
        start_paused: None,
        stuck_ms: None,
        starvation_ms: None,
        leak_ms: None,
        worker_stall_ms: None,
        timeout_ms: None,
        stress: None,
        krate: None,
    };
    let mut flavor_span = None;
    for meta in parsed {
        let nv = match meta {
            Meta::Path(p) if p.is_ident("stress") => {
                a.stress = Some(0);
                continue;
            }
            Meta::NameValue(nv) => nv,
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "expected `key = value` (or a bare `stress`)",
                ));
            }
        };
        let key = nv
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            "flavor" => {
                flavor_span = Some(nv.value.clone());
                match lit_str(&nv.value).as_deref() {
                    Some("current_thread") => a.multi_thread = false,
                    Some("multi_thread") => a.multi_thread = true,
                    _ => {
                        return Err(syn::Error::new_spanned(
                            &nv.value,
                            "`flavor` must be \"current_thread\" or \"multi_thread\"",
                        ));
                    }
                }
            }
            "worker_threads" => {
                let n: usize = lit_int(&nv.value, "worker_threads")?;
                if n == 0 {
                    return Err(syn::Error::new_spanned(
                        &nv.value,
                        "`worker_threads` may not be 0",
                    ));
                }
                a.worker_threads = Some(n);
            }
            "start_paused" => a.start_paused = Some(lit_bool(&nv.value, "start_paused")?),
            "stuck_ms" => a.stuck_ms = Some(positive(&nv.value, "stuck_ms")?),
            "starvation_ms" => a.starvation_ms = Some(positive(&nv.value, "starvation_ms")?),
            "leak_ms" => a.leak_ms = Some(positive(&nv.value, "leak_ms")?),
            "worker_stall_ms" => {
                a.worker_stall_ms = Some(positive(&nv.value, "worker_stall_ms")?);
            }
            "timeout_ms" => a.timeout_ms = Some(timeout(&nv.value)?),
            "stress" => {
                a.stress = Some(positive(&nv.value, "stress")?.try_into().map_err(|_| {
                    syn::Error::new_spanned(&nv.value, "`stress` is a number of runs (too large)")
                })?)
            }
            "crate" => {
                let s = lit_str(&nv.value).ok_or_else(|| {
                    syn::Error::new_spanned(&nv.value, "`crate` expects a string path")
                })?;
                a.krate = Some(syn::parse_str(&s)?);
            }
            _ => {
                return Err(syn::Error::new_spanned(
                    &nv.path,
                    "unknown argument; expected one of `flavor`, `worker_threads`, \
                     `start_paused`, `crate`, `stuck_ms`, `starvation_ms`, `leak_ms`, \
                     `worker_stall_ms`, `timeout_ms`, `stress`",
                ));
            }
        }
    }
    if a.worker_threads.is_some() && !a.multi_thread {
        let span = flavor_span
            .map(|e| syn::Error::new_spanned(e, ""))
            .map(|e| e.span())
            .unwrap_or_else(Span::call_site);
        return Err(syn::Error::new(
            span,
            "`worker_threads` needs `flavor = \"multi_thread\"` (as with #[tokio::test])",
        ));
    }
    Ok(a)
}

fn positive(e: &Expr, key: &str) -> syn::Result<u64> {
    let n: u64 = lit_int(e, key)?;
    if n == 0 {
        return Err(syn::Error::new_spanned(
            e,
            format!("`{key}` must be at least 1"),
        ));
    }
    Ok(n)
}

/// The test timeout in ms: any whole number, `0` meaning none.
fn timeout(e: &Expr) -> syn::Result<u64> {
    match e {
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) if !i.base10_digits().starts_with('-') => i.base10_parse::<u64>().map_err(|err| {
            syn::Error::new_spanned(
                e,
                format!("`timeout_ms`: {err} (a whole number of milliseconds; 0: no timeout)"),
            )
        }),
        _ => Err(syn::Error::new_spanned(
            e,
            "`timeout_ms` expects a whole number of milliseconds (0: no timeout)",
        )),
    }
}

/// Marks a test watched by lockscope's detector: on an `async fn`, a `#[tokio::test]`; on a
/// plain `fn`, a `#[test]` with no runtime. See `lockscope::test` for the full documentation.
#[proc_macro_attribute]
pub fn test(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr.into(), item.into()) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let args = parse_args(attr)?;
    let mut f: ItemFn = syn::parse2(item)?;
    let is_async = f.sig.asyncness.take().is_some();
    if !is_async
        && (args.multi_thread || args.worker_threads.is_some() || args.start_paused.is_some())
    {
        return Err(syn::Error::new_spanned(
            f.sig.fn_token,
            "runtime arguments (`flavor`, `worker_threads`, `start_paused`) need an `async fn`; a plain `fn` runs with no runtime",
        ));
    }
    if !is_async && args.stress.is_some() {
        return Err(syn::Error::new_spanned(
            f.sig.fn_token,
            "`stress` needs an `async fn` (a plain `fn` runs once)",
        ));
    }
    if !f.sig.inputs.is_empty() {
        return Err(syn::Error::new_spanned(
            &f.sig.inputs,
            "the test function cannot accept arguments",
        ));
    }
    let krate = args
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::lockscope));
    let name = f.sig.ident.to_string();
    let builder = if args.multi_thread {
        quote!(#krate::__private::tokio::runtime::Builder::new_multi_thread())
    } else {
        quote!(#krate::__private::tokio::runtime::Builder::new_current_thread())
    };
    let workers = args
        .worker_threads
        .map(|n| quote!(__builder.worker_threads(#n);));
    let paused = match args.start_paused {
        Some(p) => quote!(__builder.start_paused(#p);),
        None => quote!(),
    };
    let opt = |v: Option<u64>| match v {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let (stuck, starvation, leak, worker_stall, timeout) = (
        opt(args.stuck_ms),
        opt(args.starvation_ms),
        opt(args.leak_ms),
        opt(args.worker_stall_ms),
        opt(args.timeout_ms),
    );
    let body = &f.block;
    let output = match &f.sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, t) => quote!(#t),
    };
    let span = body.brace_token.span.join();
    let options = quote! {
        let mut __options = #krate::__private::ScopeOptions::default();
        __options.stuck_ms = #stuck;
        __options.starvation_ms = #starvation;
        __options.leak_ms = #leak;
        __options.worker_stall_ms = #worker_stall;
        __options.timeout_ms = #timeout;
    };
    if !is_async {
        let new_body = quote_spanned! {span=>
            {
                #options
                let __out: #output = #krate::__private::run_plain_test(
                    ::core::concat!(::core::module_path!(), "::", #name),
                    __options,
                    || #body,
                );
                __out
            }
        };
        f.block = syn::parse2(new_body)?;
        let attrs = std::mem::take(&mut f.attrs);
        return Ok(quote! {
            #[::core::prelude::v1::test]
            #(#attrs)*
            #f
        });
    }
    let stress = match args.stress {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    // The test's worker count, within which a stress run draws its own.
    let worker_count = match (args.multi_thread, args.worker_threads) {
        (false, _) => quote!(::core::option::Option::None),
        (true, Some(n)) => quote!(::core::option::Option::Some(#n)),
        (true, None) => quote!(::core::option::Option::Some(
            ::std::thread::available_parallelism().map_or(1, |n| n.get())
        )),
    };
    let new_body = quote_spanned! {span=>
        {
            #options
            let __out: #output = #krate::__private::run_async_test(
                ::core::concat!(::core::module_path!(), "::", #name),
                __options,
                #stress,
                #worker_count,
                |__workers: ::core::option::Option<usize>| {
                    let mut __builder = #builder;
                    __builder.enable_all();
                    #workers
                    if let ::core::option::Option::Some(__n) = __workers {
                        __builder.worker_threads(__n);
                    }
                    #paused
                    __builder
                },
                // Raced against the test timeout: a pending body that times out panics with
                // the dump (see the detector's `scope::with_timeout`). A closure, as a stress
                // test runs the body more than once.
                || #krate::__private::with_timeout(async #body),
            );
            __out
        }
    };
    f.block = syn::parse2(new_body)?;
    let attrs = std::mem::take(&mut f.attrs);
    Ok(quote! {
        #[::core::prelude::v1::test]
        #(#attrs)*
        #f
    })
}

#[cfg(test)]
mod tests {
    use super::{TokenStream2, expand, parse_args, quote};

    fn err(attr: TokenStream2) -> String {
        match parse_args(attr) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[::core::prelude::v1::test]
    fn timeout_ms_accepts_whole_numbers_and_zero() {
        assert_eq!(
            parse_args(quote!(timeout_ms = 1500)).unwrap().timeout_ms,
            Some(1500)
        );
        assert_eq!(
            parse_args(quote!(timeout_ms = 0)).unwrap().timeout_ms,
            Some(0)
        );
        assert_eq!(parse_args(quote!()).unwrap().timeout_ms, None);
    }

    #[::core::prelude::v1::test]
    fn bad_timeout_ms_values_get_clear_errors() {
        let expected = "`timeout_ms` expects a whole number of milliseconds (0: no timeout)";
        assert_eq!(err(quote!(timeout_ms = "1500")), expected);
        assert_eq!(err(quote!(timeout_ms = -1)), expected);
        assert_eq!(err(quote!(timeout_ms = 1.5)), expected);
        assert_eq!(err(quote!(timeout_ms = true)), expected);
        let e = err(quote!(timeout_ms = 99999999999999999999999));
        assert!(
            e.starts_with("`timeout_ms`: number too large")
                && e.ends_with("(a whole number of milliseconds; 0: no timeout)"),
            "{e}"
        );
        assert!(
            err(quote!(timeout = 5)).contains("`timeout_ms`"),
            "listed among the known arguments"
        );
    }

    #[::core::prelude::v1::test]
    fn the_async_body_is_raced_against_the_timeout_and_the_option_passed() {
        let out = expand(
            quote!(timeout_ms = 0),
            quote!(
                async fn t() {}
            ),
        )
        .unwrap()
        .to_string();
        assert!(out.contains("with_timeout"), "{out}");
        assert!(
            out.contains("timeout_ms = :: core :: option :: Option :: Some (0u64)"),
            "{out}"
        );
    }

    #[::core::prelude::v1::test]
    fn stress_is_bare_or_a_number_of_runs_and_needs_an_async_fn() {
        assert_eq!(parse_args(quote!(stress)).unwrap().stress, Some(0));
        assert_eq!(parse_args(quote!(stress = 40)).unwrap().stress, Some(40));
        assert_eq!(parse_args(quote!()).unwrap().stress, None);
        assert_eq!(err(quote!(stress = 0)), "`stress` must be at least 1");
        assert!(err(quote!(flavour)).contains("bare `stress`"));
        let plain = expand(
            quote!(stress),
            quote!(
                fn t() {}
            ),
        )
        .unwrap_err();
        assert!(plain.to_string().contains("needs an `async fn`"), "{plain}");
        let out = expand(
            quote!(stress = 3),
            quote!(
                async fn t() {}
            ),
        )
        .unwrap()
        .to_string();
        assert!(out.contains("run_async_test"), "{out}");
        assert!(out.contains("Option :: Some (3u32)"), "{out}");
    }
}
