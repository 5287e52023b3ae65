//! Secrets in the forms a hostile review found leaking (markdown labels, other languages,
//! unlabelled tokens, false references, cut values, prose, SQL, escapes, any `Authorization`
//! scheme, glued tokens and keys, session cookies, YAML parents, tool flags, vendor formats),
//! with samples of their own, and texts of the same shapes that must stay.

use super::Redactor;

fn r(s: &str) -> String {
    Redactor::default().scrub(s).into_owned()
}

/// Test secrets are built from pieces so that no scanner mistakes this file for a leak.
fn k(parts: &[&str]) -> String {
    parts.concat()
}

fn gone(template: &str, secret: &str) {
    let text = template.replace("{}", secret);
    let out = r(&text);
    assert!(!out.contains(secret), "leaked `{secret}`: {text:?} -> {out:?}");
    assert!(out.contains("[REDACTED:"), "{text:?} -> {out:?}");
    assert_eq!(r(&out), out, "not idempotent: {out:?}");
}

fn kept(text: &str) {
    assert_eq!(r(text), text);
}

#[test]
fn markdown_labels_and_tables() {
    gone("Credentials:\n* **DB password:** {}\n* **Host:** db1", "Vq7!mT2rXz");
    gone("__Secret__: {}", "Lk88-zzQp-77");
    gone("> *Token*: {} (expires Friday)", "tk_9Fh2Lq0W");
    gone("| Env | Login | Passphrase |\n|:--|:--|:--|\n| prod | ops | {} |", "Nimbus#4471");
    gone("| Name | Value |\n| --- | --- |\n| Secret key | {} |", "Rr55Kk22Ww");
    kept("| Field | Type | Notes |\n|---|---|---|\n| password | string | hashed with argon2 |");
    kept("The **Password** field is required. **Note:** rotate monthly.");
}

#[test]
fn labels_in_other_languages() {
    gone("服务器的口令是{}，明天过期", "Hz90qq1x");
    gone("私钥：{}。", "Ab12Cd34Ef56");
    gone("WLAN-Kennwort ist {} für Gäste", "Gast2025xx");
    gone("パスワード：{}", "Neko77pass");
    gone("비밀번호: {}", "Hangul42x");
    gone("Пароль: {}", "Admin55ru");
    gone("a senha é {} ok", "Praia88br");
    gone("il mot de passe est {} pour le wifi", "Maison9fr");
    gone("hasło: {}", "Polska2025");
    gone("SMTP_PASSWORD＝{}", "Mail2099x");
    kept("密码长度至少为12位，请定期修改密码。");
    kept("Bitte ändern Sie Ihr Passwort regelmäßig.");
}

#[test]
fn unlabelled_random_tokens() {
    gone("ran the job with {} yesterday", "Nq4Tz8Kw2Pv6Rx1Ly5Mb9Hc3Jd7Fs0Gg");
    gone("new Stripe(\"{}\")", "Xy7Kp2Mn9Qr4Ts8Vw3Bz6CdQ1");
    gone("the signing key is stored as {}", &k(&["9b2e4f6a8c0d1e3f5a7b9c1d", "3e5f7a9b1c3d5e7f9a1b3c5d7e9f1a3b"]));
    gone("copy {} into the bucket policy", "Pk3mRt7YhWq2XvL9cZn4TbG8sDj1FaE6uKo5iQw0");
    kept("fixed in 3f9c2e1d8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e and pushed");
    kept("trace 8c1d9f2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f, digest sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
    kept("renamed createUserAccountRegistrationHandlerWithRetryPolicy to handleSignup");
    kept("open src/features/authentication/components/LoginFormContainer.tsx");
    kept("bumped to 2.14.0-rc.3+build.20240611 on port 8443");
}

#[test]
fn values_that_only_start_like_references() {
    gone("API_PASSWORD=${}", "tr0ngP4ss#1");
    gone("{\"secret\": \"{}\"}", "%(notAref9");
    gone("password: {}", "{{broken7Xq");
    gone("ADMIN_PW=Hq(77{}", "&zzLm");
    gone("password=garden.{}", "river.stone");
    kept("password: ${ADMIN_PASSWORD}\ntoken: \"{{ vault_api_token }}\"\nsecret=%(db_secret)s");
    kept("password = config.db.password\ntoken = os.environ[\"TOKEN\"]");
}

#[test]
fn values_are_not_cut_short() {
    gone("db_password=Rk4;{}", "Tt9Uu8Ii7");
    gone("passwd=zz11&{}", "Yy22Xx33");
    gone("SMTP_PASSWORD=violet {}", "tractor ocean pencil");
    gone("  passphrase: {}\n", "amber falcon quiet meadow");
    assert_eq!(r("DB_PASSWORD=hunter2 ./run"), "DB_PASSWORD=[REDACTED:password] ./run");
    let url = r("https://example.com/login?user=ann&pass=Pw99xx&next=/home");
    assert!(url.contains("&next=/home") && !url.contains("Pw99xx"), "{url}");
}

#[test]
fn prose_and_sql() {
    gone("The password for the postgres user is {}.", "Pg_9931x");
    gone("we reset the root password to {} this morning", "Spring#2031");
    gone("the passphrase is {} for the backup disk", "lighthouse");
    gone("the door code password is '{}'", "blue whale");
    gone("please try \"{}\" as the password", "Kiwi!77");
    gone("CREATE ROLE etl LOGIN PASSWORD '{}';", "Etl#5521");
    gone("CREATE USER 'ro'@'%' IDENTIFIED WITH mysql_native_password BY '{}';", "R0nly!x");
    gone("ALTER USER scott IDENTIFIED BY {};", "Tiger2030");
    kept("The password is incorrect. The password must be reset. The token was rotated yesterday.");
    kept("My password's strength is good; change your password to something longer.");
    kept("the password for the admin account is stored in Vault");
}

#[test]
fn escaped_and_encoded() {
    gone("{\"db\":\"mysql:\\/\\/svc:{}@10.0.0.5:3306\\/app\"}", "Esc4pe99");
    let gh = k(&["gh", "p_", "Zt4Lq9Wm2Xv7Nc3Rb8Kd1Hf6Js0Pa5Ye2uIo"]);
    gone("{\"t\":\"\\u0067{}\"}", &gh[1..]);
    gone("next=mysql%3A%2F%2Fsvc%3A{}%40db%2Fapp", "Pct3nc0ded");
    gone("q=token%3D{}", &gh);
}

#[test]
fn authorization_with_any_scheme() {
    gone("-H 'Authorization: DeepL-Auth-Key {}'", "a1b2c3d4-5e6f-7a8b-9c0d-e1f2a3b4c5d6:fx");
    gone("Authorization: GenieKey {}", "7c1e2a3b-4d5e-6f70-8192-a3b4c5d6e7f8");
    gone("Proxy-Authorization: Custom {}", "Qz81Lm44Xw");
    kept("Send the Authorization: Bearer <token> header.");
}

#[test]
fn glued_tokens_and_keys() {
    gone("PROD_{}", &k(&["gh", "p_", "Hx7Lq2Wm9Xv4Nc8Rb3Kd6Hf1Js5Pa0Ye7uIo"]));
    gone("creds{}_rotated", &k(&["AK", "IA", "Z7Q2M4N6P8R1T3V5"]));
    gone("{}_copy", &k(&["np", "m_", "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"]));
    gone("REDISPASS={}", "Rd1s2025x");
    gone("ftppw: {}", "Ftp77pass");
    gone("adminPwd={}", "Adm9981x");
    gone("Cookie-less: sid={}", "a8f7e6d5c4b3a2f1e0d9c8b7a6");
    gone("laravel_session={}", "eyQ2r8Tn5Vb1Xc6Md4Kf7Hs0Jg");
    kept("bypass: true\ncompass: north\nsurpass=false");
    kept("OLDPWD=/home/dev/old\nPWD=/srv/app");
}

#[test]
fn yaml_parents_and_tool_flags() {
    gone("vars:\n  credentials:\n    smtp: {}\n    imap: other", "Smtp9911x");
    gone("api_tokens:\n  - {}\n", "Tok3nList77");
    gone("password:\n    {}\nuser: app", "NextLn2031");
    gone("gpg --symmetric --passphrase {} file.tar", "Gp9Sym!x");
    gone("ssh-keygen -t ed25519 -N \"{}\" -f ~/.ssh/id", "Kg2025!pp");
    gone("zip -r -P {} backup.zip docs/", "Zz88Backup");
    gone("7za a -p{} -mhe=on out.7z dir", "Sev3nZip9");
    gone("session.get(url, auth=(user, '{}'))", "Sess!0n99");
    kept("secrets:\n  - name: tls-cert\n    secretName: web-tls\n  db:\n    file: ./db_password.txt");
    kept("ssh-keygen -t ed25519 -C dev@laptop; zip -r out.zip src; 7z x archive.7z");
}

#[test]
fn vendor_formats() {
    for t in [
        k(&["fig", "d_", "Q8w7E6r5T4y3U2i1O0pA9s8D7f6G5h4J3k2L1"]),
        k(&["pp", "lx-", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4"]),
        k(&["ls", "v2_pt_", "0f1e2d3c4b5a69788796a5b4c3d2e1f0_9a8b7c6d5e"]),
        k(&["dck", "r_pat_", "Zx1Cv2Bn3Mq4Wr5Ty6Ui7Op8"]),
        k(&["Ab1", "8Q~", "kLmNoPqRsTuVwXyZ0123456789abcdEF"]),
    ] {
        gone("use {} here", &t);
    }
}

/// Code and package pins that only look like the shapes above: a chain of identifiers, a version
/// constraint after a weak noun.
#[test]
fn code_paths_and_version_pins_stay() {
    kept("\treturn base64.StdEncoding.EncodeToString(sum[:])");
    kept("hash with crypto.subtle.digestMessageSHA.generateKeyPair(opts)");
    kept("Bumped the pin to `polars>=1.25,<2`; nothing else changed.");
    kept("we moved the pin to 'requests==2.31.0' for now");
    // A token in dotted parts with many digits is still a token.
    gone("bot {} online", &k(&["MTE2NjQ0MTk1NzQ5", "MjU3NjMxNw", ".GZ1x9k.", "Qm7Zx2Lp9Rt4Vn8Wb3Kc6Hd1Jf5Gs0AyEu7iO"]));
}
