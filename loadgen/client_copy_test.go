package loadgen

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCloneKeepsEverySetting: Clone, and the copy of a Client that a
// Generator makes for a larger connection pool, keep every exported
// setting, those added later included; the pool's copy differs only in its
// HTTPClient. Every exported field is set to a value unlike its zero
// value, by reflection, so a field a copy drops fails the test.
func TestCloneKeepsEverySetting(t *testing.T) {
	c := &Client{}
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		f, field := v.Field(i), v.Type().Field(i)
		if !field.IsExported() {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString("set-" + field.Name)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(7 + i))
		case reflect.Uint8:
			f.SetUint(uint64(1 + i))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Map:
			m := reflect.MakeMap(f.Type())
			m.SetMapIndex(reflect.ValueOf("X-"+field.Name).Convert(f.Type().Key()), reflect.Zero(f.Type().Elem()))
			f.Set(m)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			t.Fatalf("Client.%s is a %s: teach this test to set it", field.Name, f.Kind())
		}
		require.False(t, f.IsZero(), "Client.%s", field.Name)
	}

	clone := c.Clone()
	v1 := reflect.ValueOf(clone).Elem()
	for i := range v.NumField() {
		if field := v.Type().Field(i); field.IsExported() {
			assert.Equal(t, v.Field(i).Interface(), v1.Field(i).Interface(), "Clone drops Client.%s", field.Name)
		}
	}
	clone.Header.Set("X-Clone", "1")
	assert.Empty(t, c.Header.Get("X-Clone"), "the clone's Header is its own")

	c2 := c.withTransport(defaultMaxConns + 1)
	defer c2.CloseIdleConnections()
	v2 := reflect.ValueOf(c2).Elem()
	for i := range v.NumField() {
		field := v.Type().Field(i)
		if !field.IsExported() {
			continue
		}
		if field.Name == "HTTPClient" {
			assert.NotSame(t, c.HTTPClient, c2.HTTPClient, "the copy has a client of its own")
			continue
		}
		assert.Equal(t, v.Field(i).Interface(), v2.Field(i).Interface(), "Client.%s is not copied", field.Name)
	}
	tr, ok := c2.HTTPClient.Transport.(*http.Transport)
	require.True(t, ok, "the copy's transport is net/http's")
	assert.Equal(t, defaultMaxConns+1, tr.MaxIdleConnsPerHost, "the copy's pool is sized for the load")
}
