from django import forms
from django.contrib.auth.forms import BaseUserCreationForm
from django.contrib.auth.models import User


class SignupForm(BaseUserCreationForm):
    class Meta:
        model = User
        fields = ["username", "email"]


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. 'laptop script'.")
