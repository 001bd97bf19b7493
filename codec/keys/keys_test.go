package keys

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keyA is the test key pair of ../shared/specs/vectors/vrf/keyA_key.json.
const (
	keyASeedHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	keyAPubHex  = "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"
	keyARawB64  = "A6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg="
	keyASPKIB64 = "MCowBQYDK2VwAyEAA6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg="
)

func keyA(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	seed, _ := hex.DecodeString(keyASeedHex)
	return ed25519.NewKeyFromSeed(seed)
}

func TestParsePublicKeySpellings(t *testing.T) {
	want, _ := hex.DecodeString(keyAPubHex)
	pemKey := string(MarshalPublicKeyPEM(want))
	for _, in := range []string{
		"ed25519:" + keyAPubHex, keyAPubHex, strings.ToUpper(keyAPubHex), keyARawB64, keyASPKIB64, pemKey, " " + keyARawB64 + "\n",
	} {
		got, err := ParsePublicKey(in)
		if err != nil {
			t.Errorf("ParsePublicKey(%q): %v", in, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("ParsePublicKey(%q) = %x", in, got)
		}
	}
	if SignerID(want) != "ed25519:"+keyAPubHex {
		t.Errorf("SignerID = %s", SignerID(want))
	}
	if SPKIBase64(want) != keyASPKIB64 {
		t.Errorf("SPKIBase64 = %s", SPKIBase64(want))
	}
}

func TestParsePublicKeyRejects(t *testing.T) {
	for _, in := range []string{
		"", "ed25519:", "ed25519:" + keyAPubHex[:62], "ed25519:zz" + keyAPubHex[2:], keyAPubHex[:62],
		"AAAA", "MCowBQYDK2VxAyEAA6EHv/POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg=", // X448 OID byte
		"-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n", "not base64!",
	} {
		if _, err := ParsePublicKey(in); !errors.Is(err, ErrKey) {
			t.Errorf("ParsePublicKey(%q) = %v, want ErrKey", in, err)
		}
	}
}

func TestPrivateKeyRoundTrip(t *testing.T) {
	priv := keyA(t)
	pemBytes, err := MarshalPrivateKeyPEM(priv)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"pem": pemBytes, "seed": MarshalSeedHex(priv)} {
		got, err := ParsePrivateKey(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !got.Equal(priv) {
			t.Errorf("%s: key changed", name)
		}
	}
	if hex.EncodeToString(priv.Public().(ed25519.PublicKey)) != keyAPubHex {
		t.Error("seed does not give keyA's public key")
	}
}

func TestParsePrivateKeyRejects(t *testing.T) {
	for _, in := range []string{"", keyASeedHex[:60], keyASeedHex + "00", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
		string(MarshalPublicKeyPEM(make([]byte, 32)))} {
		if _, err := ParsePrivateKey([]byte(in)); !errors.Is(err, ErrKey) {
			t.Errorf("ParsePrivateKey(%q) = %v, want ErrKey", in, err)
		}
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	priv := keyA(t)
	p := filepath.Join(dir, "log.key")
	if err := WritePrivateKeyFile(p, priv); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("private key file mode %v, want 0600", st.Mode().Perm())
	}
	if err := WritePrivateKeyFile(p, priv); err == nil {
		t.Error("overwrote an existing key file")
	}
	got, err := LoadPrivateKey(p)
	if err != nil || !got.Equal(priv) {
		t.Fatalf("LoadPrivateKey: %v", err)
	}

	hp := filepath.Join(dir, "bundle.hmac")
	if err := WriteHMACKeyFile(hp, []byte("secret\n")); err != nil {
		t.Fatal(err)
	}
	k, err := LoadHMACKey(hp)
	if err != nil {
		t.Fatal(err)
	}
	if k.Name != "bundle.hmac" || string(k.Secret) != "secret\n" {
		t.Errorf("LoadHMACKey = %+v", k)
	}
	c := k.Candidates()
	if len(c) != 2 || string(c[1].Secret) != "secret" {
		t.Errorf("Candidates = %+v", c)
	}
	if c := (HMACKey{Name: "k", Secret: []byte("raw")}).Candidates(); len(c) != 1 {
		t.Errorf("Candidates without newline = %+v", c)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadHMACKey(empty); !errors.Is(err, ErrKey) {
		t.Errorf("empty HMAC key file: %v", err)
	}
}

func TestVectorHMACKeyHasNoNewline(t *testing.T) {
	k, err := LoadHMACKey("../../testdata/vectors/rvww/hmac_key.txt")
	if err != nil {
		t.Fatal(err)
	}
	if string(k.Secret) != "seedref-rvww-hmac-key-0123456789" || len(k.Candidates()) != 1 {
		t.Errorf("vector key = %q", k.Secret)
	}
}

func FuzzParseKeys(f *testing.F) {
	for _, s := range []string{keyASeedHex, keyAPubHex, keyARawB64, keyASPKIB64, "ed25519:" + keyAPubHex,
		"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f\n-----END PRIVATE KEY-----\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if priv, err := ParsePrivateKey(data); err == nil && len(priv) != ed25519.PrivateKeySize {
			t.Fatalf("private key of %d bytes", len(priv))
		}
		if pub, err := ParsePublicKey(string(data)); err == nil && len(pub) != ed25519.PublicKeySize {
			t.Fatalf("public key of %d bytes", len(pub))
		}
	})
}
