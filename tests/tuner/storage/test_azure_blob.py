"""Azure's settings read from the environment as plain values: which `pyarrow.fs.AzureFileSystem`
arguments each connection string or variable gives, and that the endpoint they name is the one Arrow
builds from them (the server itself is tested in test_object_store.py, against Azurite)."""

from __future__ import annotations

import pytest

from tuner.storage.azure_blob import AzureSettingsError, options_from_environment, parse_connection_string


def arrow_base_url(scheme: str, authority: str, account: str) -> str:
    """Arrow's rule for an account's URL from its options, transcribed from `BuildBaseUrl` in
    apache/arrow cpp/src/arrow/filesystem/azurefs.cc: an authority starting with `.` follows the
    account (`https://acct.blob.core.windows.net/`), another one takes the account in its path
    (`http://127.0.0.1:10000/devstoreaccount1/`)."""
    if authority.startswith("."):
        return f"{scheme}://{account}{authority}/"
    return f"{scheme}://{authority}/{account}/"


def blob_url(options: dict[str, str]) -> str:
    return arrow_base_url(
        options["blob_storage_scheme"], options["blob_storage_authority"], options["account_name"]
    )


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://127.0.0.1:10000/devstoreaccount1",  # Azurite: the account in the path
        "http://azurite:10000/devstoreaccount1",  # Azurite as a Compose service
        "https://acct.blob.core.windows.net",  # Azure: the account in the host name
        "https://acct.blob.core.chinacloudapi.cn",  # another Azure cloud
    ],
)
def test_a_connection_strings_blob_endpoint_is_the_url_arrow_builds(endpoint):
    account = "devstoreaccount1" if "10000" in endpoint else "acct"
    text = f"DefaultEndpointsProtocol=https;AccountName={account};AccountKey=a2V5;BlobEndpoint={endpoint};"
    options = options_from_environment({"AZURE_STORAGE_CONNECTION_STRING": text})
    assert blob_url(options) == endpoint.rstrip("/") + "/"
    assert options["account_key"] == "a2V5" and "sas_token" not in options


def test_an_endpoint_suffix_names_the_blob_and_dfs_hosts_of_another_cloud():
    text = "DefaultEndpointsProtocol=https;AccountName=acct;SharedAccessSignature=sv=2024&sig=x%3D;EndpointSuffix=core.usgovcloudapi.net"
    options = options_from_environment({"AZURE_STORAGE_CONNECTION_STRING": text})
    assert blob_url(options) == "https://acct.blob.core.usgovcloudapi.net/"
    assert (
        arrow_base_url("https", options["dfs_storage_authority"], "acct")
        == "https://acct.dfs.core.usgovcloudapi.net/"
    )
    assert options["sas_token"] == "sv=2024&sig=x%3D"  # a value holding `=` is kept whole


def test_use_development_storage_is_azurites_account_on_loopback():
    options = options_from_environment({"AZURE_STORAGE_CONNECTION_STRING": "UseDevelopmentStorage=true"})
    assert blob_url(options) == "http://127.0.0.1:10000/devstoreaccount1/"
    assert options["account_key"].startswith("Eby8vdM02x")


def test_an_account_with_a_key_a_sas_or_neither_for_azure_ad():
    base = {"AZURE_STORAGE_ACCOUNT_NAME": "acct"}
    assert options_from_environment({**base, "AZURE_STORAGE_ACCOUNT_KEY": "k"}) == {
        "account_name": "acct",
        "account_key": "k",
    }
    assert options_from_environment({**base, "AZURE_STORAGE_SAS_TOKEN": "sv=1"}) == {
        "account_name": "acct",
        "sas_token": "sv=1",
    }
    assert options_from_environment(base) == {"account_name": "acct"}  # DefaultAzureCredential


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {},
            r"^no Azure account: neither AZURE_STORAGE_ACCOUNT_NAME nor AZURE_STORAGE_CONNECTION_STRING is set",
        ),
        ({"AZURE_STORAGE_CONNECTION_STRING": "AccountKey=k"}, r"names no AccountName"),
        (  # a part without a name is named by its place, not shown: it may be a pasted key
            {"AZURE_STORAGE_CONNECTION_STRING": "AccountName=a;c2VjcmV0a2V5"},
            r"part 2 is not a Name=value pair$",
        ),
    ],
)
def test_missing_or_malformed_settings_are_refused_naming_the_variable(env, message):
    with pytest.raises(AzureSettingsError, match=message):
        options_from_environment(env)


def test_a_connection_strings_pairs_keep_values_holding_equals_signs():
    assert parse_connection_string("A=1; B = x=y ;;") == {"A": "1", "B": "x=y"}
