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
    kept("the pin is ^1.4.2 in package.json");
    kept("bumped the token crate to tokio ~> 1.38");
    // A caret or `==` inside a password is no version.
    gone("root pw is {}", &k(&["hT5^mW", "8&qR"]));
    gone("the api key is {} now", &k(&["Zx9==", "qW7mK2pL"]));
    // A token in dotted parts with many digits is still a token.
    gone("bot {} online", &k(&["MTE2NjQ0MTk1NzQ5", "MjU3NjMxNw", ".GZ1x9k.", "Qm7Zx2Lp9Rt4Vn8Wb3Kc6Hd1Jf5Gs0AyEu7iO"]));
}

#[test]
fn secrets_split_across_lines_or_literals() {
    let jwt = k(&["ey", "JhbGciOiJFUzI1NiJ9.eyJ1aWQiOjQyLCJyb2xlIjoib3BzIn0.", "Vb3Nq8Xw2Lm5Rt7Yp0Kc4Hd"]);
    let jwt_tail = "9Jf6Gs1AzQe3Ui";
    gone(&format!("session: {jwt}\n{{}}\nthat is all"), jwt_tail);
    let pat = k(&["gl", "pat-", "Hq7Zx2Lp"]);
    gone(&format!("GITLAB={pat}\n    {{}}\n"), "9Rt4Vn8Wb3Kc");
    gone("export DEPLOY_TOKEN=Tq8Mv3Xc1Lz6Rk\\\n{}", "Wp2Nb7Hj4Fd9");
    gone("const apiKey = 'Rv7Lq2Xz' +\n  '{}';", "Mk9Pw4Tn6Yb1");
    gone("CLIENT_SECRET = (\n    \"Gh4Jk8Lm\"\n    \"{}\"\n)", "Qw2Er6Ty0Ui3");
    gone("char *secret = \"Zp3Xc7Vb\"\n    \"{}\";", "Nm5Lk9Jh1Gf4");
    gone("String password = \"Ab3Cd5\".concat(\"{}\");", "Ef7Gh9Ij2");
    gone("$db_password = 'Kx81Qz' . '{}';", "Lw73Rm55");
    gone("pass := \"Ts9Uv2\" +\n\t\"{}\"", "Wx4Yz6Ab8");
    gone("smtp:\n  password:\n      {}\n  port: 587", "MailNext77x");
    gone("  api_token:\n    {}\n", "Tk55Lm22Qp");
    // Ordinary pieces stay as they were.
    kept("greeting = \"Hello, \" +\n    \"world\"\nprint(msg + \"!\")");
    kept("label = (\n    \"A long sentence that \"\n    \"goes on to the next line\"\n)");
    kept("fixed in 9fceb02d0ae598e95dc970b74767f19372d61af8\nThanks for the review.");
    kept("dotnet user-secrets list\nls -la \\\n  --color=auto");
    kept("See src/features/authentication/LoginForm2Container.tsx\nREADME.md");
}

#[test]
fn key_material_without_a_pem_header() {
    let rsa = k(&["MIIEpAIBAAKCAQEAx3Vq9Lr2Tz7Wk", "P0mS8nJf4Hb6Gd1Ce5Ya3Ru7Io2Pa9KlQzx"]);
    let rsa2 = "Xn4Bv8Mq1Wz5Rt3Yu7Io9Pa2Sd6Fg0Hj4Kl8Zx1Cv5Bn3Mq7We9Rt2Yu6Io0Pa4A";
    gone(&format!("here is the key:\n{rsa}\n{rsa2}\n{{}}\nthanks"), "Sd8Fg1Hj5Kl=");
    gone("{}", &k(&["MC4CAQAw", "BQYDK2VwBCIEIF3xQ9vL2mR7tW4yZ8bN6cH1jK5gD0sA3eU7iO9pQm2X"]));
    gone("key blob {} end", &k(&["b3BlbnNzaC1rZXktdjEAAAAA", "BG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"]));
    let ppk = "PuTTY-User-Key-File-3: ecdsa-sha2-nistp256\nEncryption: none\nComment: deploy\nPublic-Lines: 1\n\
               AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABB\nPrivate-Lines: 1\n{}\nPrivate-MAC: ";
    gone(
        &format!("{ppk}{}", "3c9f0a7e5b1d2c4e6f8a0b2d4c6e8f0a1b3d5c7e9f0a2b4c6d8e0f1a3b5c7d9e"),
        "AAAAIQDq7Wm3Zr9Tx2Lk5Vb8Nc1Hf4",
    );
    assert!(!r(&ppk.replace("{}", "AAAAIQDq7Wm3Zr9Tx2Lk5Vb8Nc1Hf4")).contains("3c9f0a7e5b1d2c4e6f8a"), "the MAC");
    gone("deployer wallet:\n  0x{}", "9b1c3e5a7d2f4b6c8e0a1d3f5b7c9e2a4d6f8b0c1e3a5d7f9b2c4e6a8d0f1b3c");
    gone(
        "0x{} <- the hardhat account's private key",
        "7e2d4f6a8c0b1d3e5f7a9c2b4d6e8f0a1c3e5b7d9f2a4c6e8b0d1f3a5c7e9b2d",
    );
    gone(
        "Secret Recovery Phrase: {}",
        "orbit velvet candle harbor mimic quote anchor lunar pistol rescue blanket thrive",
    );
    gone("MNEMONIC=\"{}\"", "grain tackle venue oyster ripple clay sudden mercy hover elite bonus ladder");
    gone(
        "alice:{}:19700:0:99999:7:::",
        &k(&[
            "$6$",
            "Vq2mLx$",
            "Xn4Bv8Mq1Wz5Rt3Yu7Io9Pa2Sd6Fg0Hj4Kl8Zx1Cv5Bn3Mq7We9Rt2Yu6Io0Pa4Sd8Fg1Hj5Kl7Zx3Cv9Bn2Mq6",
        ]),
    );
    gone("hashed: {}", &k(&["$2a$", "10$", "R3ko9vLPjdlhy3ANSApNzfJkBhdgm8q03meHybe79MKAeM28miXzu"]));
    gone(
        "PASSWORD_HASH='{}'",
        &k(&["$argon2i$", "v=19$m=4096,t=3,p=1$", "b3JjaGFyZHNhbHQ$", "Tq8Mv3Xc1Lz6RkWp2Nb7Hj4Fd9Gs5Ua"]),
    );
    gone("labels: basicauth.users=ops:{}", &k(&["$$apr1$$", "Lq2Vx9Wz$$", "Ke7Np3Rt5Yb1Mc8Hd4Jf6G"]));
    gone(
        "bob:{}:19800::::::",
        &k(&["$y$", "j9T$", "Rq3Lm8Xv2Nb6Tc1Hf5Jd9.$", "Pw4Kz7Ys2Ua6Gb0Ie3Oc8Mx1Vn5Rl9Qt2Sh7Dj4Fk"]),
    );
    // What only looks like them stays.
    kept("sent, tx 0x5c7e9b2d1f3a5c7e9b2d7e2d4f6a8c0b1d3e5f7a9c2b4d6e8f0a1c3e5b7d9f2a mined in block 19000000");
    kept("seed phrase: write the twelve words on paper and keep it offline, never in a file");
    kept("Hardhat's test mnemonic is test test test test test test test test test test test junk");
    kept("the hash looks like $2b$12$<salt><hash>; awk '{print $1$2}' and echo \"$1$HOME\"");
}

/// The second review's leaks: a password given by position to a login call, and PowerShell's
/// plain-text secure string.
#[test]
fn passwords_given_by_position_and_in_powershell() {
    gone("smtp.login(\"me@x.com\", \"{}\")", "Tr0ub4dor&3x");
    gone("server.login(user, \"{}\")", "Kq8!vLz2Wp");
    gone("var c = new NetworkCredential(\"admin\", \"{}\");", "Nc7#pQ2xLm");
    gone("M = imaplib.IMAP4_SSL(host); M.login('bob', '{}')", "Im4p!Pass77");
    gone("cnx = pymysql.connect(\"db\", \"root\", \"{}\")", "My5ql!Root9");
    kept("server.login(user, password)\nsmtp.login(user, pw)\nftp.login(USER, os.environ[\"FTP_PW\"])");
    assert_eq!(
        r("$pw = ConvertTo-SecureString \"P@ssw0rd!2024\" -AsPlainText -Force"),
        "$pw = ConvertTo-SecureString \"[REDACTED:password]\" -AsPlainText -Force"
    );
    gone("Connect-X -Password (ConvertTo-SecureString '{}' -AsPlainText -Force)", "Cn!Thing2024");
    kept("$pw = Read-Host -AsSecureString\n$c = New-Object PSCredential($user, $pw)");
}

/// Terse notes: a label and its value with no `:` between, a user and a password side by side.
#[test]
fn passwords_in_terse_notes() {
    gone("username admin\npassword {}\n", "Xy7#kq9!mZ");
    gone("pw {}", "Xy7#kq9!mZ");
    gone("creds are admin:{}", "Xy7#kq9!mZ");
    gone("login admin / {}", "Xy7#kq9!mZ");
    kept("pass\npassword reset\npw = getpass()\nlogin as admin / root");
}

/// SDK keys without a label, and TOTP seeds.
#[test]
fn sdk_keys_and_totp_seeds() {
    gone("client = Client(\"AC0123456789abcdef0123456789abcdef\", \"{}\")", "f1e2d3c4b5a69788796a5b4c3d2e1f00");
    gone("my 2FA seed is {}", "JBSWY3DPEHPK3PXQ");
    gone("TOTP secret key: {}", "jbsw y3dp ehpk 3pxq");
    gone("otpauth://totp/ACME:bob?secret={}&issuer=ACME", "JBSWY3DPEHPK3PXP");
    kept("Enable 2FA: the TOTP secret is shown once.\nA footprint of the hotplug path.");
}

/// Lists under a secret's key, in JSON and YAML flow style.
#[test]
fn lists_under_a_secret_key() {
    gone("{\"passwords\": [\"{}\", \"b2Pw!yy88\"]}", "a1Pw!xx99");
    gone("tokens: [ \"{}\" ]", "Tk1aa77xx");
    kept("tokens = [\"hello\", \"world\"]\n\"passwords\": [\"required\", \"min:8\"]");
}

/// What a secret store's CLI prints on the lines after it, and CSV columns under a secret's name.
#[test]
fn what_a_secret_store_prints_and_csv_columns() {
    gone("$ vault kv get -field=password secret/db\n{}\n$ ls", "Vk9pass!7731");
    gone("PS C:\\> op read op://v/db/password\n{}\n", "Op7!read991x");
    gone("[root@db ~]# security find-generic-password -s db -w\n{}\n", "Kc!chain2024");
    kept("$ vault kv get -field=password secret/db | pbcopy\n$ echo ok\nok");
    gone("user,password,email\nalice,{},alice@x.com", "Al1ce!pw77");
    gone("name\tapi_key\tnotes\nsvc\t{}\tmain", "Ak9x7Lm2Qp");
    kept("user,password,role\nalice,********,admin\nbob,<redacted>,viewer\ncarol,${CAROL_PW},ops");
}

/// A secret built in code from literals a call joins.
#[test]
fn strings_built_from_literals() {
    let (a, b) = ("ghp_R8sV2nXq7LmZ4t", "Wc9YbK1dPe6HfJ3gAu0oSi");
    for t in [
        format!("concat!(\"{a}\", \"{b}\")"),
        format!("format!(\"{{}}{{}}\", \"{a}\", \"{b}\")"),
        format!("fmt.Sprintf(\"%s%s\", \"{a}\", \"{b}\")"),
        format!("\"%s%s\" % (\"{a}\", \"{b}\")"),
        format!("\"\".join([\"{a}\", \"{b}\"])"),
        format!("[\"{a}\",\n  \"{b}\"].join(\"\")"),
    ] {
        let out = r(&t);
        assert!(!out.contains(a) && !out.contains(b), "{t:?} -> {out:?}");
    }
    kept("let url = format!(\"{}{}\", base, path);\nmsg = \"\".join([\"Hello, \", \"world\"])\nf(\"a\", \"b\")");
}
