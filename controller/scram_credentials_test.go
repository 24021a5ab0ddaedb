package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func upsert(user string, mech int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, mech, iterations, []byte("salt"), []byte("salted-password-of-32-bytes!!!!!")
	return u
}

func scramDeletion(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = user, mech
	return d
}

func alterCodes(resp *kmsg.AlterUserSCRAMCredentialsResponse) map[string]int16 {
	out := map[string]int16{}
	for _, r := range resp.Results {
		out[r.User] = r.ErrorCode
	}
	return out
}

// TestAlterScramCredentials checks Kafka's ZooKeeper-mode validation, the
// stored format and the change notification, with user names that need
// sanitizing in ZooKeeper paths.
func TestAlterScramCredentials(t *testing.T) {
	ctx := context.Background()
	st := testDB(t).NewSession()
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		upsert("alice", 1, 4096), upsert("alice", 2, 8192),
		upsert("a b*c", 1, 4096),
		upsert("few", 1, 4095), upsert("many", 2, 16385), upsert("", 1, 4096), upsert("mech", 9, 4096),
		upsert("dup", 1, 4096), upsert("dup", 1, 5000),
	}
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{scramDeletion("nobody", 1)}
	codes := alterCodes(AlterScramCredentials(ctx, st, req))
	want := map[string]int16{
		"alice": 0, "a b*c": 0,
		"few": kerr.UnacceptableCredential.Code, "many": kerr.UnacceptableCredential.Code, "": kerr.UnacceptableCredential.Code,
		"mech": kerr.UnsupportedSaslMechanism.Code, "dup": kerr.DuplicateResource.Code, "nobody": kerr.ResourceNotFound.Code,
	}
	for u, c := range want {
		if codes[u] != c {
			t.Errorf("%q: code %d, want %d", u, codes[u], c)
		}
	}
	if len(codes) != len(want) {
		t.Errorf("results %v", codes)
	}
	data, _, err := st.Get(ctx, "/config/users/a%20b%2Ac")
	if err != nil || !strings.HasPrefix(string(data), `{"version":1,"config":{"SCRAM-SHA-256":"salt=c2FsdA==,stored_key=`) {
		t.Fatalf("stored user config %s: %v", data, err)
	}
	children, _, err := st.Children(ctx, ConfigChangesPath)
	if err != nil || len(children) != 2 {
		t.Fatalf("change notifications %v: %v", children, err)
	}
	note, _, _ := st.Get(ctx, ConfigChangesPath+"/"+children[0])
	if !strings.Contains(string(note), `"entity_path":"users/`) || !strings.Contains(string(note), `"version":2`) {
		t.Errorf("notification %s", note)
	}
	cfg, _ := UserConfigs(ctx, st, "alice")
	c, err := auth.ParseScramCredential(cfg["SCRAM-SHA-512"])
	if err != nil || c.Iterations != 8192 {
		t.Fatalf("alice's SCRAM-SHA-512: %+v %v", c, err)
	}
	if want := auth.ScramSHA512.CredentialFromSalted([]byte("salted-password-of-32-bytes!!!!!"), []byte("salt"), 8192); string(c.StoredKey) != string(want.StoredKey) {
		t.Error("stored key is not derived from the salted password")
	}

	// One bad change refuses all of a user's changes.
	req = kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{scramDeletion("alice", 1), scramDeletion("alice", 9)}
	if codes := alterCodes(AlterScramCredentials(ctx, st, req)); codes["alice"] != kerr.UnsupportedSaslMechanism.Code {
		t.Errorf("bad deletion: %v", codes)
	}
	if cfg, _ := UserConfigs(ctx, st, "alice"); cfg["SCRAM-SHA-256"] == "" {
		t.Error("SCRAM-SHA-256 deleted by a refused request")
	}
	req.Deletions = req.Deletions[:1]
	if codes := alterCodes(AlterScramCredentials(ctx, st, req)); codes["alice"] != 0 {
		t.Errorf("deletion: %v", codes)
	}

	describe := DescribeScramCredentials(ctx, st, nil, true)
	var users []string
	for _, r := range describe.Results {
		users = append(users, r.User)
	}
	if strings.Join(users, ",") != "a b*c,alice" {
		t.Errorf("describe all: %v", users)
	}
	one := DescribeScramCredentials(ctx, st, []string{"alice", "ghost", "", "alice"}, false)
	got := map[string]int16{}
	for _, r := range one.Results {
		got[r.User] = r.ErrorCode
		if r.User == "alice" && r.ErrorCode == 0 {
			t.Error("alice requested twice described without DUPLICATE_RESOURCE")
		}
	}
	if got["ghost"] != kerr.ResourceNotFound.Code || got[""] != kerr.ResourceNotFound.Code || got["alice"] != kerr.DuplicateResource.Code || len(one.Results) != 3 {
		t.Errorf("describe: %v", one.Results)
	}
}

func TestSanitizeEntityName(t *testing.T) {
	for name, want := range map[string]string{"alice": "alice", "a b": "a%20b", "x*": "x%2A", "t~": "t~", "u@ex.com": "u%40ex.com", "a+b": "a%2Bb"} {
		if got := SanitizeEntityName(name); got != want {
			t.Errorf("%q: %q, want %q", name, got, want)
		}
		if back, err := DesanitizeEntityName(want); err != nil || back != name {
			t.Errorf("desanitize %q: %q %v", want, back, err)
		}
	}
}
