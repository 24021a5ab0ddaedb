package quota

import "testing"

func TestParseEntity(t *testing.T) {
	alice, ip := "alice", "10.1.2.3"
	for _, tc := range []struct {
		parts []EntityPart
		want  Entity
		err   bool
	}{
		{[]EntityPart{{"user", &alice}}, Entity{User: Named("alice")}, false},
		{[]EntityPart{{"client-id", nil}}, Entity{Client: DefaultName}, false},
		{[]EntityPart{{"client-id", &alice}, {"user", nil}}, Entity{User: DefaultName, Client: Named("alice")}, false},
		{nil, Entity{}, true},
		{[]EntityPart{{"user", &alice}, {"user", nil}}, Entity{}, true},
		{[]EntityPart{{"ip", nil}}, Entity{IP: DefaultName}, false},
		{[]EntityPart{{"ip", &ip}}, Entity{IP: Named(ip)}, false},
		{[]EntityPart{{"ip", &alice}}, Entity{}, true},
		{[]EntityPart{{"ip", &ip}, {"user", &alice}}, Entity{}, true},
		{[]EntityPart{{"client-id", nil}, {"ip", nil}}, Entity{}, true},
	} {
		got, err := ParseEntity(tc.parts)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseEntity(%+v) = %+v, %v", tc.parts, got, err)
		}
	}
}

func TestValidateAndFormat(t *testing.T) {
	for _, tc := range []struct {
		key    string
		value  float64
		remove bool
		ok     bool
		text   string
	}{
		{ProducerByteRate, 1048576, false, true, "1048576"},
		{ConsumerByteRate, 1.5, false, false, ""},
		{ConsumerByteRate, 1.5, true, true, ""},
		{RequestPercentage, 200, false, true, "200.0"},
		{ControllerMutationRate, 2.5, false, true, "2.5"},
		{"connection_creation_rate", 1, false, false, ""},
		{"bogus", 1, true, false, ""},
	} {
		err := ValidateOp(tc.key, tc.value, tc.remove)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateOp(%s, %v, %v) = %v", tc.key, tc.value, tc.remove, err)
		}
		if tc.text != "" && FormatValue(tc.key, tc.value) != tc.text {
			t.Errorf("FormatValue(%s, %v) = %q, want %q", tc.key, tc.value, FormatValue(tc.key, tc.value), tc.text)
		}
	}
}

func TestValidateEntityOp(t *testing.T) {
	ip := Entity{IP: Named("10.1.2.3")}
	user := Entity{User: Named("u")}
	for _, tc := range []struct {
		e      Entity
		key    string
		value  float64
		remove bool
		ok     bool
	}{
		{ip, ConnectionCreationRate, 10, false, true},
		{ip, ConnectionCreationRate, 1.5, false, false},
		{ip, ConnectionCreationRate, 1.5, true, true},
		{ip, ProducerByteRate, 10, false, false},
		{user, ConnectionCreationRate, 10, false, false},
		{user, ProducerByteRate, 10, false, true},
	} {
		if err := ValidateEntityOp(tc.e, tc.key, tc.value, tc.remove); (err == nil) != tc.ok {
			t.Errorf("ValidateEntityOp(%+v, %s, %v, %v) = %v", tc.e, tc.key, tc.value, tc.remove, err)
		}
	}
	if got := FormatValue(ConnectionCreationRate, 10); got != "10" {
		t.Errorf("FormatValue(connection_creation_rate, 10) = %q", got)
	}
}
