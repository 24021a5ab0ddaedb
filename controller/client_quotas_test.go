package controller

import (
	"testing"

	"github.com/brook-mq/brook/quota"
)

// A change notification names its entity by ClientQuotaPath; the watch
// maps it back to apply that one entity's quotas.
func TestClientQuotaEntityInvertsPath(t *testing.T) {
	for _, e := range []quota.Entity{
		{User: quota.Named("alice")},
		{User: quota.Named("CN=bob,O=x y/z")},
		{User: quota.DefaultName},
		{Client: quota.Named("client 1")},
		{Client: quota.DefaultName},
		{User: quota.Named("alice"), Client: quota.Named("c/1")},
		{User: quota.DefaultName, Client: quota.DefaultName},
		{IP: quota.Named("10.0.0.1")},
		{IP: quota.DefaultName},
	} {
		typ, name := ClientQuotaPath(e)
		got, ok := ClientQuotaEntity(typ, name)
		if !ok || got != e {
			t.Errorf("%s/%s: %+v %v, want %+v", typ, name, got, ok, e)
		}
	}
	for _, bad := range [][2]string{{EntityUsers, ""}, {EntityUsers, "a/b"}, {EntityClients, ""}, {EntityTopics, "t"}, {EntityUsers, "%zz"}} {
		if e, ok := ClientQuotaEntity(bad[0], bad[1]); ok {
			t.Errorf("%s/%s: %+v, want none", bad[0], bad[1], e)
		}
	}
}

func TestQuotaValues(t *testing.T) {
	cfg := map[string]string{"producer_byte_rate": "1024", "consumer_byte_rate": "x", "SCRAM-SHA-256": "salt=...", "connection_creation_rate": "5"}
	got := QuotaValues(quota.Entity{User: quota.Named("u")}, cfg)
	if len(got) != 1 || got["producer_byte_rate"] != 1024 {
		t.Errorf("user: %v, want producer_byte_rate 1024 only", got)
	}
	got = QuotaValues(quota.Entity{IP: quota.Named("10.0.0.1")}, cfg)
	if len(got) != 1 || got["connection_creation_rate"] != 5 {
		t.Errorf("ip: %v, want connection_creation_rate 5 only", got)
	}
}
