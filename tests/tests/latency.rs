//! QEMU tests of the latency tracers' common files (Linux: trace.c under
//! CONFIG_TRACER_MAX_TRACE): `tracing_max_latency` in every trace array
//! and `tracing_thresh` at the top, both in µs, with Linux 6.1's errors
//! (a sign or text: EINVAL, more than 64 bits: ERANGE, nothing changed).

use std::time::Duration;

use tests::Kernel;

const T: &str = "/tracing";
const EINVAL: &str = "sh: echo: write error: Invalid argument\n";
const ERANGE: &str = "sh: echo: write error: Numerical result out of range\n";

fn run(k: &mut Kernel, cmd: &str) -> String {
    k.run(cmd).replace('\r', "")
}

#[test]
fn max_latency_and_thresh_files() {
    let mut k = Kernel::boot(&["--smp", "2"]);
    for dir in [T.to_string(), format!("{T}/instances/foo")] {
        if dir.contains("instances") {
            assert_eq!(run(&mut k, &format!("mkdir {dir}")), "");
        }
        let f = format!("{dir}/tracing_max_latency");
        assert_eq!(run(&mut k, &format!("cat {f}")), "0\n", "{f}");
        assert_eq!(run(&mut k, &format!("echo 250 > {f}")), "");
        assert_eq!(run(&mut k, &format!("cat {f}")), "250\n");
        for (bad, err) in [
            ("-1", EINVAL),
            ("abc", EINVAL),
            ("' 5'", EINVAL),
            ("18446744073709551616", ERANGE),
        ] {
            assert_eq!(run(&mut k, &format!("echo {bad} > {f}")), err, "{bad}");
            assert_eq!(run(&mut k, &format!("cat {f}")), "250\n", "{bad}");
        }
        // µs are multiplied by 1000 in 64 bits, as Linux does.
        assert_eq!(run(&mut k, &format!("echo 18446744073709551615 > {f}")), "");
        assert_eq!(run(&mut k, &format!("cat {f}")), "18446744073709550\n");
        // Writing 0 resets the maximum.
        assert_eq!(run(&mut k, &format!("echo 0 > {f}")), "");
        assert_eq!(run(&mut k, &format!("cat {f}")), "0\n");
    }
    // The two arrays' maxima are their own.
    assert_eq!(
        run(&mut k, &format!("echo 7 > {T}/tracing_max_latency")),
        ""
    );
    assert_eq!(
        run(
            &mut k,
            &format!("cat {T}/instances/foo/tracing_max_latency")
        ),
        "0\n"
    );
    // tracing_thresh is global: the top level only.
    assert_eq!(run(&mut k, &format!("cat {T}/tracing_thresh")), "0\n");
    assert_eq!(run(&mut k, &format!("echo 100 > {T}/tracing_thresh")), "");
    assert_eq!(run(&mut k, &format!("cat {T}/tracing_thresh")), "100\n");
    assert_eq!(run(&mut k, &format!("echo x > {T}/tracing_thresh")), EINVAL);
    assert_eq!(run(&mut k, &format!("cat {T}/tracing_thresh")), "100\n");
    assert_eq!(run(&mut k, &format!("echo 0 > {T}/tracing_thresh")), "");
    assert!(run(&mut k, &format!("ls {T}/instances/foo/tracing_thresh")).contains("No such file"));

    k.send(b"poweroff\n");
    assert_eq!(k.wait_exit(Duration::from_secs(60)), 0);
}
